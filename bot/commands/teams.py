"""`askdesk teams package --bot-id ID [--out FILE]`: the Teams app package to upload."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

teams_app = typer.Typer(help="Microsoft Teams app tools.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(teams_app, name="teams")


@teams_app.command("package")
def package(
    bot_id: str = typer.Option(..., "--bot-id", help="The bot's Microsoft Entra app id (CLIENT_ID)."),
    out: Path = typer.Option(Path("askdesk-teams.zip"), "--out", help="Where to write the zip."),
    domain: Optional[str] = typer.Option(None, "--domain", help="Host of the messaging endpoint, e.g. abc123.devtunnels.ms."),
    template: Optional[Path] = typer.Option(None, "--template", help="Manifest template (default teams/manifest.json)."),
) -> None:
    """Write the app package (manifest.json, color.png, outline.png) for Teams' 'Upload a custom app'."""
    from agent.registry.declaration import DeclarationError
    from bot.commands import existing, writable_target
    from bot.teams.manifest import ManifestError, build_manifest, find_template, write_package

    if template is not None:
        existing(template, "file")
    writable_target(out, makes_parents=True)  # write_package creates its directory
    try:
        source = find_template(template)
        manifest = build_manifest(source.read_text(encoding="utf-8"), bot_id, domain, registry_commands())
        written = write_package(out, manifest)
    except (ManifestError, DeclarationError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except OSError as exc:
        typer.echo(f"error: cannot write {out}: {exc.strerror or exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"wrote {written} (manifest from {source}); upload it in Teams: Apps → Manage your apps → "
               "Upload an app → Upload a custom app.")


def registry_commands() -> list:
    """The deployment's registry commands (from their declarations; no store is opened)."""
    from agent.capabilities.registry import declared_command
    from agent.config import load_settings
    from agent.registry.loader import load_declarations

    return [declared_command(d) for d in load_declarations(load_settings())]
