"""Adaptive Cards for registry results: the list a command (`NAME <query>`) returns in a
chat, and the one-record cards (with a compact preview) the message extension offers to insert.
Every registry renders through its `RecordView`s (agent/capabilities/base.py): title, details
line, extra card lines. And the card of an answer that holds tables (`answer_cards`): its text
and its tables in order, each table a card `Table` (Teams does not draw Markdown tables in a
message); an answer too large for one message is several cards, cut between elements, and a
long table between rows, each piece with its header (`answer_cards`).

Built with the SDK's card models (microsoft_teams.cards), version 1.5 as Teams renders it.
Registry values (titles, addresses, notes, summaries) are rendered by `teams_text`
(bot/teams/escape.py): a card's Markdown links and the thumbnail preview's HTML cannot hide an
address, mention anyone or inject markup.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from microsoft_teams.api import (
    AdaptiveCardAttachment,
    MessagingExtensionAttachment,
    ThumbnailCard,
    ThumbnailCardAttachment,
    card_attachment,
)
from microsoft_teams.cards import AdaptiveCard, ColumnDefinition, Container, Table, TableCell, TableRow, TextBlock

from agent.capabilities.base import Command, CommandResult, RecordView
from agent.tables import Table as TableData, blocks
from bot.teams.escape import teams_text

MAX_RECORDS = 10
CARD_VERSION = "1.5"
ICONS = {"phone": "☎"}  # RecordView detail hints, as Teams shows them
CARD_BYTES = 20_000  # of one answer card's JSON: a Teams message holds about 28 KB, entities and buttons included

Text = Callable[..., str]


def details_line(view: RecordView) -> str:
    """address · phone · ages · distance, as on Slack (rendered for Teams)."""
    return teams_text(view.details_line(ICONS))


def record_block(view: RecordView) -> Container:
    return Container(items=[
        TextBlock(text=teams_text(view.title), weight="Bolder", wrap=True),
        TextBlock(text=details_line(view) or " ", wrap=True, is_subtle=True, spacing="None"),
    ], separator=True)


def record_list_card(result: CommandResult, command: Command, text: Text, prompts: Any) -> AdaptiveCard:
    """The whole result: what was understood, notes, up to MAX_RECORDS records."""
    records = result.records
    body: list[Any] = [TextBlock(text=text("teams_records_title", records=command.records,
                                           summary=teams_text(result.summary or result.text)),
                                 weight="Bolder", size="Medium", wrap=True)]
    if result.notes:
        body.append(TextBlock(text=teams_text("; ".join(result.notes)), wrap=True, is_subtle=True))
    if not records:
        body.append(TextBlock(text=teams_text(prompts.render("records_none", records=command.records)), wrap=True))
    body.extend(record_block(view) for view in records[:MAX_RECORDS])
    shown = min(len(records), MAX_RECORDS)
    if result.total > shown:
        more = prompts.render("records_more", shown=shown, total=result.total)
        body.append(TextBlock(text=teams_text(more), wrap=True, is_subtle=True))
    return AdaptiveCard(version=CARD_VERSION, body=body)


def record_card(view: RecordView) -> AdaptiveCard:
    """One record, as inserted into a message from the compose box."""
    body: list[Any] = [TextBlock(text=teams_text(view.title), weight="Bolder", size="Medium", wrap=True),
                       TextBlock(text=details_line(view) or " ", wrap=True)]
    for line in view.more:
        small = {"size": "Small"} if line.icon == "small" else {}
        body.append(TextBlock(text=teams_text(line.text), wrap=True, is_subtle=True, **small))
    return AdaptiveCard(version=CARD_VERSION, body=body)


def extension_attachment(view: RecordView) -> MessagingExtensionAttachment:
    """A search result: the card to insert, and the preview row shown in the result list."""
    main = card_attachment(AdaptiveCardAttachment(content=record_card(view)))
    preview = card_attachment(ThumbnailCardAttachment(content=ThumbnailCard(
        title=teams_text(view.title), text=details_line(view), images=None)))
    return MessagingExtensionAttachment(content_type=main.content_type, content=main.content, preview=preview)


def notes_attachment(result: CommandResult, command: Command, text: Text, prompts: Any) -> MessagingExtensionAttachment:
    """The result's notes ("did you mean …?", "read 'austn' as Austin") as the first row of the
    compose box's results, like the chat card's note line; picking it inserts the whole list card."""
    main = card_attachment(AdaptiveCardAttachment(content=record_list_card(result, command, text, prompts)))
    preview = card_attachment(ThumbnailCardAttachment(content=ThumbnailCard(
        title=teams_text("; ".join(result.notes)), text=teams_text(result.summary or result.text), images=None)))
    return MessagingExtensionAttachment(content_type=main.content_type, content=main.content, preview=preview)


def _table(table: TableData) -> Table:
    def row(cells: tuple[str, ...], header: bool = False) -> TableRow:
        return TableRow(cells=[TableCell(items=[TextBlock(text=teams_text(c) or " ", wrap=True,
                                                          **({"weight": "Bolder"} if header else {}))]) for c in cells])

    return Table(columns=[ColumnDefinition(width=1) for _ in table.header], first_row_as_headers=True,
                 show_grid_lines=True, rows=[row(table.header, True), *(row(r) for r in table.rows)])


def _text(markdown: str) -> str:
    """Answer Markdown for a card's TextBlock, which draws bold, italics, lists and links but
    no quotes: a quoted line shows as its text."""
    return teams_text("\n".join(line[2:] if line.startswith("> ") else line for line in markdown.split("\n")))


def _size(element: Any) -> int:
    return len(json.dumps(element.model_dump(by_alias=True, exclude_none=True), ensure_ascii=False))


def _table_pieces(table: TableData, limit: int) -> list[Table]:
    """The table as card Tables of at most `limit` bytes each, cut between rows, each with the header."""
    return [_table(piece) for piece in table.pieces(limit, size=lambda t: _size(_table(t)))]


def answer_cards(answer: str, extra: list[str] = (), limit: int = CARD_BYTES) -> list[AdaptiveCard]:
    """An answer that holds tables as cards of at most about `limit` bytes (a Teams message
    holds about 28 KB): its Markdown in TextBlocks and each table as card Tables, in order, a
    long table cut between rows; `extra`: lines after them (sources, a notice), rendered already."""
    elements: list[Any] = []
    for block in blocks(answer):
        if isinstance(block, TableData):
            elements.extend(_table_pieces(block, limit // 2))
        elif block.strip():
            elements.append(TextBlock(text=_text(block), wrap=True))
    elements.extend(TextBlock(text=line, wrap=True, is_subtle=True) for line in extra if line)
    cards: list[list[Any]] = [[]]
    size = 0
    for element in elements:
        grown = _size(element)
        if cards[-1] and size + grown > limit:
            cards.append([])
            size = 0
        cards[-1].append(element)
        size += grown
    return [AdaptiveCard(version=CARD_VERSION, body=body) for body in cards]
