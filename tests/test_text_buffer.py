"""TextBuffer: few surface updates for many model chunks, nothing lost, order kept."""

from __future__ import annotations

import asyncio

from bot.text_buffer import TextBuffer


async def test_first_text_at_once_then_whole_words_at_each_turn_and_the_rest_on_close():
    sent: list[str] = []

    async def send(text: str) -> None:
        sent.append(text)

    buffer = TextBuffer(send, seconds=0.05)
    await buffer.add("  ")  # whitespace alone is not worth an update
    assert sent == []
    await buffer.add("Hi")
    assert sent == ["  Hi"]
    for piece in [" there, this is", " a longer", " sentence.", " And", " mo"]:
        await buffer.add(piece)
    assert sent == ["  Hi"]  # nothing before its turn, however much waits
    await asyncio.sleep(0.06)
    # its turn: everything up to the sentence end near the end; the unfinished rest waits
    assert sent == ["  Hi", " there, this is a longer sentence. "]
    await buffer.add("re")
    assert await buffer.close() == "And more"
    assert "".join(sent) + "And more" == buffer.sent
    assert buffer.updates == 2


async def test_waiting_text_goes_out_after_seconds_in_order():
    sent: list[str] = []

    async def send(text: str) -> None:
        await asyncio.sleep(0.01)
        sent.append(text)

    buffer = TextBuffer(send, seconds=0.05)
    await buffer.add("One")
    await buffer.add(" two")
    await asyncio.sleep(0.3)  # the timer (0.05 s) fires before this sleep ends
    assert sent == ["One", " two"]
    await buffer.add(" three")
    assert await buffer.close() == " three"  # close cancels the timer: the caller sends the rest
    await asyncio.sleep(0.1)
    assert sent == ["One", " two"]


# --- the flow (issue 20: the stream froze for 4 s, then showed 600 characters at once) ---


def test_cut_point_prefers_a_near_sentence_end_then_the_last_whole_word():
    from bot.text_buffer import cut_point

    assert cut_point("The limit is $92,000 a year. It rises") == len("The limit is $92,000 a year. ")
    text = "The limit is $92,000 a year. For larger families it ris"
    assert cut_point(text) == len("The limit is $92,000 a year. For larger families it ")  # the end is far: words
    assert cut_point("It ends here.") == len("It ends here.")
    assert cut_point("unfinished") == 0  # no boundary at all


async def test_a_paced_model_flows_about_once_per_interval_in_whole_words():
    """A model writing 4 characters every 5 ms: an update every `seconds`, never sooner, never
    much later, each ending at a word or sentence boundary; nothing lost."""
    loop = asyncio.get_running_loop()
    sent: list[tuple[float, str]] = []

    async def send(text: str) -> None:
        sent.append((loop.time(), text))
        await asyncio.sleep(0.002)

    words = " ".join(f"word{i} and more." if i % 7 == 6 else f"word{i}" for i in range(120))
    buffer = TextBuffer(send, seconds=0.2)
    started = loop.time()
    for i in range(0, len(words), 4):
        await buffer.add(words[i:i + 4])
        await asyncio.sleep(0.005)
    rest = await buffer.close()
    assert "".join(t for _, t in sent) + rest == words
    assert sent[0][0] - started < 0.1  # the first text at once, not after an interval
    times = [at for at, _ in sent]
    gaps = [b - a for a, b in zip(times, times[1:])]
    # never sooner than the interval; later only by a loaded machine's scheduling delay
    assert len(sent) >= 4 and all(0.199 <= g < 0.4 for g in gaps), gaps
    for _, text in sent[1:-1]:  # the first text goes at once, whatever it is
        assert text[-1].isspace() or text.endswith("."), text  # never cut mid-word


async def test_a_word_without_an_end_is_held_briefly_then_shown():
    sent: list[str] = []

    async def send(text: str) -> None:
        sent.append(text)

    buffer = TextBuffer(send, seconds=0.05, hold=0.1)
    await buffer.add("Go")
    await buffer.add(" supercalifragilistic")  # the model pauses mid-word
    await asyncio.sleep(0.08)
    assert sent == ["Go"]  # the word waits for its end
    await asyncio.sleep(0.3)
    assert "".join(sent) == "Go supercalifragilistic"  # held at most `hold`, then shown as it is
    assert await buffer.close() == ""
