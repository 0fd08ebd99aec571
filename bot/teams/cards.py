"""Adaptive Cards for facility results: the list `facility <query>` returns in a chat, and
the one-facility cards (with a compact preview) the message extension offers to insert.

Built with the SDK's card models (microsoft_teams.cards), version 1.5 as Teams renders it.
"""

from __future__ import annotations

from typing import Any, Callable

from microsoft_teams.api import (
    AdaptiveCardAttachment,
    MessagingExtensionAttachment,
    ThumbnailCard,
    ThumbnailCardAttachment,
    card_attachment,
)
from microsoft_teams.cards import AdaptiveCard, Container, TextBlock

from agent.facilities.command import FacilityCommandResult

MAX_FACILITIES = 10
CARD_VERSION = "1.5"

Text = Callable[..., str]


def _city(hit: Any) -> str:
    return hit.city.title() if hit.city.isupper() else hit.city


def address_line(hit: Any) -> str:
    return ", ".join(x for x in (hit.address, _city(hit), hit.zip) if x)


def details_line(hit: Any) -> str:
    """address · phone · ages · distance, as on Slack."""
    details = [address_line(hit)] if address_line(hit) else []
    if hit.phone:
        details.append(f"☎ {hit.phone}")
    if hit.ages:
        details.append("ages: " + ", ".join(hit.ages).lower())
    if hit.distance_miles is not None:
        details.append(f"{hit.distance_miles:.1f} mi")
    return " · ".join(details)


def hits(result: FacilityCommandResult) -> list[Any]:
    return list(result.results.facilities) if result.results else []


def facility_block(hit: Any) -> Container:
    return Container(items=[
        TextBlock(text=hit.name or "Unnamed facility", weight="Bolder", wrap=True),
        TextBlock(text=details_line(hit) or " ", wrap=True, is_subtle=True, spacing="None"),
    ], separator=True)


def facility_list_card(result: FacilityCommandResult, text: Text) -> AdaptiveCard:
    """The whole result: what was understood, notes, up to MAX_FACILITIES facilities."""
    found = hits(result)
    total = result.results.total if result.results else 0
    body: list[Any] = [TextBlock(text=text("teams_facility_title", summary=result.summary or result.text),
                                 weight="Bolder", size="Medium", wrap=True)]
    notes = list(result.notes)
    if result.results and result.results.message:
        notes.append(result.results.message)
    if notes:
        body.append(TextBlock(text="; ".join(notes), wrap=True, is_subtle=True))
    if not found:
        body.append(TextBlock(text=text("teams_facility_none"), wrap=True))
    body.extend(facility_block(hit) for hit in found[:MAX_FACILITIES])
    shown = min(len(found), MAX_FACILITIES)
    if total > shown:
        body.append(TextBlock(text=text("teams_facility_more", shown=shown, total=total), wrap=True, is_subtle=True))
    return AdaptiveCard(version=CARD_VERSION, body=body)


def facility_card(hit: Any) -> AdaptiveCard:
    """One facility, as inserted into a message from the compose box."""
    body: list[Any] = [TextBlock(text=hit.name or "Unnamed facility", weight="Bolder", size="Medium", wrap=True),
                       TextBlock(text=details_line(hit) or " ", wrap=True)]
    if hit.hours:
        body.append(TextBlock(text=f"Hours: {hit.hours}", wrap=True, is_subtle=True))
    if hit.operation_number:
        body.append(TextBlock(text=f"Operation #{hit.operation_number}", wrap=True, is_subtle=True, size="Small"))
    return AdaptiveCard(version=CARD_VERSION, body=body)


def extension_attachment(hit: Any) -> MessagingExtensionAttachment:
    """A search result: the card to insert, and the preview row shown in the result list."""
    main = card_attachment(AdaptiveCardAttachment(content=facility_card(hit)))
    preview = card_attachment(ThumbnailCardAttachment(content=ThumbnailCard(
        title=hit.name or "Unnamed facility", text=details_line(hit), images=None)))
    return MessagingExtensionAttachment(content_type=main.content_type, content=main.content, preview=preview)
