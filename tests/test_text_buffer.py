"""TextBuffer: few surface updates for many model chunks, nothing lost, order kept."""

from __future__ import annotations

import asyncio

from bot.text_buffer import TextBuffer


async def test_first_text_at_once_then_per_chars_at_a_sentence_end_and_the_rest_on_close():
    sent: list[str] = []

    async def send(text: str) -> None:
        sent.append(text)

    buffer = TextBuffer(send, chars=20, seconds=60)
    await buffer.add("  ")  # whitespace alone is not worth an update
    assert sent == []
    await buffer.add("Hi")
    assert sent == ["  Hi"]
    for piece in [" there, this is", " a longer", " sentence.", " And", " more"]:
        await buffer.add(piece)
    # 20+ characters waited for the sentence end (within a quarter more), then went out together
    assert sent == ["  Hi", " there, this is a longer sentence."]
    assert await buffer.close() == " And more"
    assert "".join(sent) + " And more" == buffer.sent
    assert buffer.updates == 2


async def test_waiting_text_goes_out_after_seconds_in_order():
    sent: list[str] = []

    async def send(text: str) -> None:
        await asyncio.sleep(0.01)
        sent.append(text)

    buffer = TextBuffer(send, chars=600, seconds=0.05)
    await buffer.add("One")
    await buffer.add(" two")
    await asyncio.sleep(0.3)  # the timer (0.05 s) fires before this sleep ends
    assert sent == ["One", " two"]
    await buffer.add(" three")
    assert await buffer.close() == " three"  # close cancels the timer: the caller sends the rest
    await asyncio.sleep(0.1)
    assert sent == ["One", " two"]
