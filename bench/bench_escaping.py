"""What escaping untrusted text for Slack costs per message (bot/slack/escape.py).

    .venv/bin/python bench/bench_escaping.py [--runs 2000]

Typical answers, built deterministically: 500 and 2,000 characters of answer prose (bold,
a list, a citation, one Markdown link, an `&`), and 10,000 characters with many links and
mentions (every paragraph has a Markdown link, a `<url|label>` link, `<!channel>`, `<@U…>`,
`<#C…>`, a code block with markup). Each is escaped as every field gets it:

- `safe_markdown`: an answer's `markdown` block (posted answers);
- `safe_mrkdwn`: mrkdwn text (a message's `text`, context and section blocks);
- stream: the same answer streamed as Reply streams it (MarkdownStream, ~600-character pieces
  plus the stop call): the total for the whole message.

Median and p99 microseconds per message over `--runs` runs each (after a warm-up). Target:
under 1 ms per message.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from typing import Callable

from bot.slack.escape import MarkdownStream, safe_markdown, safe_mrkdwn

TARGET_US = 1000.0
PIECE_CHARS = 600  # what a fast model writes in about a second (bot/slack/reply.py: STREAM_APPEND_EVERY)

PROSE = ("Families of **4** qualify when their income is below *85%* of the state median [1]. "
         "Income & assets are counted per household; see [the income table](https://twc.texas.gov/rates?year=2026&size=4). "
         "Bring these documents:\n\n- proof of income\n- proof of residence\n- a photo ID\n\n")
NOISY = ("<!channel> the income limit changed: see <https://evil.example/login|Click here to re-verify> or "
         "[the table](https://twc.texas.gov/rates?a=1&b=2) and ask <@U0123ABCD> in <#C0123ABCD> or "
         "<!subteam^S0123ABCD>; <!here> <!everyone> & more [2].\n\n"
         "```html\n<td>4 &amp; up</td> <a href=\"https://x.org\">x</a> rates[4](size)\n```\n\n"
         "> a quoted rule with ![logo](https://x.org/logo.png) and <https://x.org/plain>\n\n")


def text_of(chars: int, unit: str) -> str:
    return (unit * (chars // len(unit) + 1))[:chars]


def streamed(text: str) -> str:
    """The whole message as Reply streams it: pieces of ~600 characters (a busy second of a fast
    model), then the stop call."""
    md = MarkdownStream()
    held, out = "", []
    for start in range(0, len(text), PIECE_CHARS):
        piece = held + text[start:start + PIECE_CHARS]
        safe, ready = md.render(piece)
        out.append(safe)
        held = piece[ready:]
    out.append(md.render(held, final=True)[0])
    return "".join(out)


def measure(fn: Callable[[str], str], text: str, runs: int) -> tuple[float, float]:
    for _ in range(max(20, runs // 20)):
        fn(text)
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn(text)
        samples.append((time.perf_counter() - start) * 1e6)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.99))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()

    cases = [("500 chars, prose", text_of(500, PROSE)),
             ("2,000 chars, prose", text_of(2000, PROSE)),
             ("10,000 chars, many links/mentions", text_of(10_000, NOISY))]
    functions: list[tuple[str, Callable[[str], str]]] = [
        ("safe_markdown", safe_markdown), ("safe_mrkdwn", safe_mrkdwn), ("stream (whole message)", streamed)]

    print(f"escaping untrusted text for Slack — Python {platform.python_version()}, {platform.machine()}, "
          f"{args.runs} runs each")
    print(f"{'message':<36} {'function':<24} {'median µs':>10} {'p99 µs':>10}  target < {TARGET_US:.0f} µs")
    worst = 0.0
    for label, text in cases:
        for name, fn in functions:
            median, p99 = measure(fn, text, args.runs)
            worst = max(worst, p99)
            print(f"{label:<36} {name:<24} {median:>10.1f} {p99:>10.1f}  {'ok' if p99 < TARGET_US else 'OVER'}")
    print(f"worst p99: {worst:.1f} µs per message ({'within' if worst < TARGET_US else 'over'} the 1 ms target)")


if __name__ == "__main__":
    main()
