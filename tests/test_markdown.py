"""The one Markdown splitter (agent/markdown.py) that chunking and Slack splitting share."""

from agent.knowledge.chunking import split_sections
from agent.markdown import segments
from bot.slack.blocks import split_markdown

DOC = """# Guide

Intro line
---

```bash
# not a heading: a shell comment

echo done
```

| a | b |
|---|---|
| 1 | 2 |

## Rates ##
Body."""


def test_segments_keep_every_line_once_and_find_real_headings_only():
    parts = segments(DOC)
    assert "\n".join(line for s in parts for line in s.lines) == DOC  # nothing lost, nothing added
    assert [(s.kind, s.title) for s in parts if s.kind == "heading"] == [("heading", "Guide"), ("heading", "Rates")]
    [code] = [s for s in parts if s.kind == "code"]
    assert code.text.startswith("```bash") and code.text.endswith("```") and "echo done" in code.text
    assert [s.kind for s in parts if s.kind == "table"] == ["table"]
    assert not any(s.kind == "heading" and s.title == "Intro line" for s in parts)  # setext stays text


def test_chunking_and_slack_agree_on_code_blocks():
    sections = split_sections(DOC, title="Guide")
    assert [s.path for s in sections] == [[], ["Rates"]]
    assert "# not a heading" in sections[0].body  # a comment inside a fence is not a section
    long = "x " * 600 + "\n\n" + DOC.split("\n\n", 2)[2] + "\n\n" + "y " * 600
    parts = split_markdown(long, limit=1300)
    assert any("```bash" in p and "echo done" in p and p.count("```") == 2 for p in parts)
