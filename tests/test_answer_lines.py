"""Search-only answers that answer (issue 34): the lines of the best passages that answer the
question come first — the table row with its header, the list item, the sentence with the asked
figure — quoted with their section and source number, under exactly one lead-in line."""

from __future__ import annotations

from agent.capabilities.knowledge import ANSWERED, BORDERLINE, UNANSWERABLE, WEAK, compose, lead_in
from agent.knowledge.answer_lines import answer_lines, asks_for_amount, to_weigh, units
from agent.knowledge.search import Passage
from agent.prompts import default_prompts
from agent.tools.base import ToolResult

PERMITS = """# Building permits

Willamette Valley Development Services issues building permits for six cities. Trade permits
have their own pages.

## Fees

Fees are based on the total valuation of the work.

| Total valuation | Permit fee |
|---|---|
| $1 to $2,000 | $95 (minimum fee) |
| $2,001 to $25,000 | $95 for the first $2,000, plus $11.50 for each additional $1,000 |

- **Plan review fee:** 65% of the building permit fee, paid when the application is submitted.
- **Technology fee:** 4% of the permit fee. It pays for PermitLink and is never refunded.
"""

INCOME = ("**A4:** A family of 5 with bi-weekly income must earn no more than $4,106 per pay period to remain "
          "eligible for the program in Board Contract Year 2026. This corresponds to an annual income limit of "
          "$106,768. Families report income changes to their workforce board.")


def passage(text: str, section: str = "Fees", source: str = "building-permits.md") -> Passage:
    return Passage(text=text, source=source, title=source, section=section, score=1.0, url="https://docs.example/p")


def test_a_passage_is_cut_into_sentences_items_and_rows_never_headings():
    kinds = [(u.kind, u.text[:20]) for u in units(PERMITS)]
    assert ("row", "$1 to $2,000 | $95 (") in kinds and ("item", "**Plan review fee:**") in kinds
    assert not any("Building permits" == text for _, text in kinds)
    row = next(u for u in units(PERMITS) if u.kind == "row")
    assert row.table is not None and row.table.header == ("Total valuation", "Permit fee")


def test_the_row_that_answers_comes_first_with_its_header():
    [best, *_] = answer_lines("plan review fee percent", [passage(PERMITS)])
    assert best.unit.text.startswith("**Plan review fee:**")
    lines = answer_lines("permit fee for $2,001 to $25,000 valuation", [passage(PERMITS)])
    assert lines[0].unit.kind == "row" and "$11.50" in lines[0].unit.text


def test_an_amount_question_is_answered_by_the_sentence_with_the_figure():
    lines = answer_lines("family of 5 paid biweekly max income?", [passage(INCOME, "Q4")])
    assert "$4,106" in lines[0].unit.text
    assert asks_for_amount("cuánto cuesta el permiso") and asks_for_amount("phí bao nhiêu")
    assert not asks_for_amount("who signs the application form")


def test_no_answer_lines_when_no_unit_holds_the_question_s_terms():
    assert answer_lines("parking garage opening hours", [passage(INCOME, "Q4")]) == []


def test_answer_lines_come_first_quoted_with_section_and_source_under_one_lead_in():
    found = [passage("Unrelated text about inspections.", "Inspections", "inspections.md"), passage(INCOME, "Q4: Income")]
    text = compose(ToolResult(text="", data=found), default_prompts(), query="family of 5 biweekly max income").text
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines[0] == default_prompts().render(ANSWERED)
    assert lines[1].startswith("> ") and "$4,106" in lines[1] and "Q4: Income" in lines[1] and lines[1].endswith("[2]")
    assert "(https://docs.example/p)" in lines[1]  # the section links to the source
    assert sum(line in {default_prompts().render(n) for n in (ANSWERED, WEAK, BORDERLINE, UNANSWERABLE)}
               for line in lines) == 1


def test_the_answering_rows_show_as_a_table_with_their_header():
    text = compose(ToolResult(text="", data=[passage(PERMITS)]), default_prompts(),
                   query="permit fee for $2,001 to $25,000").text
    head = text.split("**[1]**")[0]
    assert "| Total valuation | Permit fee |" in head and "$11.50" in head and "— *[Fees]" in head


SIGNS = """## Fees

| Sign area | Permit fee |
|---|---|
| Up to 32 square feet | **$120** |
| 33 to 100 square feet | **$195** |
| Over 100 square feet | **$290** |
| Sidewalk sign (A-frame) annual permit | **$50** per year |
"""


def test_a_short_table_is_shown_whole_where_one_of_its_rows_answers():
    """"50 sqft" is answered by the row "33 to 100 square feet", a range no word of the question
    matches: the rows the words pick ($120, $50) would answer it wrongly. A short table is read
    at a glance, so it is shown whole, once, with its citation."""
    text = compose(ToolResult(text="", data=[passage(SIGNS, "Fees", "sign-permits.md")]), default_prompts(),
                   query="sign permit 50 sqft cost").text
    head = text.split("**[1]**")[0]
    assert "| 33 to 100 square feet | **$195** |" in head and "| Up to 32 square feet | **$120** |" in head
    assert head.count("| Sign area | Permit fee |") == 1
    [line, *_] = answer_lines("sign area up to 32 square feet fee", [passage(SIGNS)])
    assert line.unit.kind == "row" and "$290" in line.unit.markdown()


def test_a_long_table_shows_only_the_rows_that_answer():
    rows = "\n".join(f"| Zone R{i} | {i * 5} feet |" for i in range(1, 13))
    table = f"| Zone | Front setback |\n|---|---|\n{rows}\n"
    text = compose(ToolResult(text="", data=[passage(table, "Setbacks", "zoning.md")]), default_prompts(),
                   query="front setback zone R7").text
    head = text.split("**[1]**")[0]
    assert "| Zone R7 | 35 feet |" in head and "| Zone R3 |" not in head


def test_one_lead_in_chosen_from_the_evidence():
    strong, weak = ToolResult(text=""), ToolResult(text="", weak_evidence=True)
    assert lead_in(strong) == ANSWERED
    assert lead_in(weak) == WEAK
    assert lead_in(strong, borderline=True) == BORDERLINE
    assert lead_in(weak, borderline=True, unanswerable=True) == UNANSWERABLE
    text = compose(ToolResult(text="", data=[passage(INCOME)]), default_prompts(), query="income",
                   lead=BORDERLINE).text
    assert text.startswith(default_prompts().render(BORDERLINE))
    assert default_prompts().render(ANSWERED) not in text  # "may be outside…" then "Here are…": never both


def test_a_question_in_a_q_and_a_page_is_never_its_answer_line():
    page = ("**Q6: How does the waiting list work for child care services?**\n\n"
            "**A:** Boards contact families on the waiting list every 90 days and remove them after "
            "10 business days without a response.")
    [best] = answer_lines("how does the waiting list work", [passage(page, "Q6")])[:1]
    assert best.unit.text.startswith("**A:**") and "90 days" in best.unit.text


def test_a_passage_is_shown_from_the_section_it_is_filed_under():
    from agent.capabilities.knowledge import from_section

    chunk = "**Health insurance**\n\nCoverage starts on day one.\n\n**401(k)**\n\nThe company matches up to 5% of salary."
    assert from_section(chunk, "Benefits > 401(k)").startswith("**401(k)**")
    assert from_section(chunk, "Elsewhere") == chunk
    text = compose(ToolResult(text="", data=[passage(chunk, "Benefits > 401(k)", "benefits.md")]), default_prompts(),
                   query="retirement plan").text
    assert text.split("**[1]**", 1)[1].split("\n\n", 2)[1] == "**401(k)**"


def test_the_question_s_own_figures_pick_the_line_even_written_per_month():
    page = ("**A9:** For a family of 5, the BCY2025 PSOC chart covers monthly incomes from $499 to $8,481.\n\n"
            "**A3:** For a family of 3 with a monthly income of $2,890, the weekly PSOC is $30 for the first child "
            "and $4 for the second, totaling $34 per week.")
    [best, *_] = answer_lines("under the BCY2025 PSOC chart, what's the weekly for a fam of 3 making $2,890/mo?",
                              [passage(page, "PSOC")])
    assert "$34 per week" in best.unit.text


ATTENDANCE = """## Steps

| Points in the rolling year | Step |
|---|---|
| 6 | Written warning |
| 10 | Termination |
"""
ASSAULT_ES = ("Tiene derecho a hasta 3 días de permiso administrativo con goce de sueldo después de una "
              "agresión física, sin puntos de asistencia.")


def test_words_match_only_within_a_language_so_a_lower_passage_never_heads_the_answer():
    """A Spanish question whose best passage is an English table: a Spanish sentence ranked
    under it that merely shares the question's words ("puntos de asistencia") is not its
    answer line; the English table leads."""
    question = "¿Cuántos puntos de asistencia llevan a un despido?"
    english = Passage(text=ATTENDANCE, source="attendance-points.md", section="Steps", score=1.0, lang="en")
    spanish = Passage(text=ASSAULT_ES, source="prevencion-de-agresiones-es.md", section="Después", score=0.9, lang="es")
    assert answer_lines(question, [spanish]) != []  # alone, its words make it a line
    assert answer_lines(question, [english, spanish]) == []
    # a passage of the question's language above the other-language one still gives its lines
    assert answer_lines(question, [spanish, english])[0].passage == 0
    # a question whose language cannot be told (a code) reads every passage
    assert answer_lines("SR-1", [english, passage("File the SR-1 report before the end of the shift.")]) != []


def test_a_source_in_another_language_says_so_in_the_askers_language():
    from agent.prompts import speaking

    question = "¿Cuántos puntos de asistencia llevan a un despido?"
    english = Passage(text=ATTENDANCE, source="attendance-points.md", title="Attendance Points", section="Steps",
                      score=1.0, lang="en")
    spanish = Passage(text=ASSAULT_ES, source="prevencion-de-agresiones-es.md", title="Prevención de agresiones",
                      section="Después", score=0.9, lang="es")
    result = ToolResult(text="", data=[english, spanish])
    with speaking("es"):
        text = compose(result, default_prompts(), query=question).text
    assert "**[1]** Attendance Points — Steps (en inglés)" in text
    assert "**[2]** Prevención de agresiones — Después\n" in text  # its own language: nothing said
    with speaking("vi"):
        assert "(bằng tiếng Anh)" in compose(result, default_prompts(), query="Bao nhiêu điểm thì bị sa thải?").text
    # an English question to an English page: nothing said
    assert "(in " not in compose(ToolResult(text="", data=[english]), default_prompts(), query="attendance steps").text


NUISANCE = """## Common nuisance standards

- Grass and weeds may not be taller than **10 inches**.
- No more than **one** inoperable vehicle, kept in the driveway for no more than **30 days**; others must be in a garage.
- Garbage cans must be out of view from the street except on collection day.
"""

GARAGE = "Converting an existing legal garage to an ADU is allowed even if the garage is closer than 5 feet to the property line."


def test_with_closeness_a_line_that_says_it_in_other_words_comes_first():
    question = "broken-down car parked in a driveway for weeks, how long is that allowed"
    found = [passage(NUISANCE, "Common nuisance standards", "code-enforcement.md"), passage(GARAGE, "ADUs", "adu.md")]
    assert answer_lines(question, found) == []  # by words alone no line holds enough of the question
    close = {u.text: 0.80 for u in units(NUISANCE)} | {GARAGE: 0.79}
    close[next(u.text for u in units(NUISANCE) if "inoperable" in u.text)] = 0.86
    [best, *rest] = answer_lines(question, found, closeness=close)
    assert "inoperable vehicle" in best.unit.text and best.passage == 0
    assert all(line.score < best.score for line in rest)


def test_closeness_of_lines_not_among_the_passages_or_of_one_line_alone_changes_nothing():
    question = "plan review fee percent"
    found = [passage(PERMITS)]
    assert answer_lines(question, found, closeness={"not a line here": 0.9, "nor this": 0.1}) == answer_lines(question, found)
    lone = next(u.text for u in units(PERMITS) if u.text.startswith("**Technology fee"))
    assert answer_lines(question, found, closeness={lone: 0.9}) == answer_lines(question, found)


BOUNCED = """## Returned payments

| Item | Charge |
|---|---|
| Card processing | 2.5% of the payment |
| Returned (bounced) check | $35 per check |
| Refund request | within 180 days of payment |
"""


def test_an_answer_in_another_language_is_quoted_by_its_meaning():
    """A Spanish question whose best passage is an English table: its row that means what was
    asked is quoted (words cannot tell it: they meet across languages only by chance), none
    without closeness, and never from a Spanish passage ranked under it."""
    question = "¿Cuánto cobran si el banco rechaza mi cheque?"
    english = Passage(text=BOUNCED, source="payment-methods.md", section="Returned payments", score=1.0, lang="en")
    spanish = Passage(text=ASSAULT_ES, source="prevencion-de-agresiones-es.md", section="Después", score=0.9, lang="es")
    assert answer_lines(question, [english, spanish]) == []
    rows = {u.text: 0.80 for u in units(BOUNCED)}
    rows[next(t for t in rows if "bounced" in t)] = 0.84
    close = rows | {ASSAULT_ES: 0.95}  # closer, but in the question's language below the answer
    [best, *rest] = answer_lines(question, [english, spanish], closeness=close)
    assert "$35 per check" in best.unit.text and best.passage == 0
    assert all(line.passage == 0 for line in rest)
    # all its section's lines are weighed, not only those sharing the question's words
    assert {u.text for u in to_weigh(question, [english, spanish])} == set(rows)


def test_an_answer_line_from_another_language_says_so():
    from agent.prompts import speaking

    question = "¿Cuánto cobran si el banco rechaza mi cheque?"
    english = Passage(text=BOUNCED, source="payment-methods.md", title="Payment methods", section="Returned payments",
                      score=1.0, lang="en")
    close = {u.text: (0.84 if "bounced" in u.text else 0.80) for u in units(BOUNCED)}
    with speaking("es"):
        text = compose(ToolResult(text="", data=[english]), default_prompts(), query=question, closeness=close).text
    # a short table, shown whole (WHOLE_ROWS), with the note that it is in English
    assert "| Returned (bounced) check | $35 per check |\n| Refund request | within 180 days of payment |\n\n" \
           "— *Returned payments* [1] (en inglés)" in text


def test_vietnamese_typed_without_marks_reads_vietnamese_lines_never_other_languages_by_meaning():
    """The embedder reads a question typed without marks apart from every written language, so
    lines in another language are not quoted for it by meaning; its own language's are, by words
    (the index folds the marks away) as a marked question's would be."""
    question = "phi tra lai sec bi tu choi bao nhieu"
    english = Passage(text=BOUNCED, source="payment-methods.md", section="Returned payments", score=1.0, lang="en")
    close = {u.text: (0.84 if "bounced" in u.text else 0.80) for u in units(BOUNCED)}
    # the second has no common word by which its language could be guessed: Vietnamese all the same
    for asked in (question, "sec bi tra lai mat phi gi"):
        assert answer_lines(asked, [english], closeness=close) == []
        assert to_weigh(asked, [english]) == []  # nothing embedded for it either
    vietnamese = Passage(text="## Thanh toán\n\n- Phí trả lại séc bị từ chối: **$35** mỗi lần.\n- Thẻ tín dụng: phí 2,5%.\n",
                         source="thanh-toan-vi.md", section="Thanh toán", score=1.0, lang="vi")
    [best, *_] = answer_lines(question, [vietnamese, english])
    assert "$35" in best.unit.text


PROBATION = """## Probation

When a provider is placed on probation by CCR, Boards must:

1. notify parents of the corrective action status within five business days;
2. stop new referrals to the provider;
3. review the provider monthly until probation ends.

Probation is lifted by CCR, not by the Board.
"""


def test_a_line_that_introduces_a_list_is_shown_with_its_list_once():
    """"Boards must:" names what follows; quoted alone it answers nothing. It is shown with the
    list it introduces (weighed by meaning as itself), and an item of that list is not quoted again."""
    [intro, *items, last] = units(PROBATION)
    assert intro.text.endswith("Boards must:") and intro.then.startswith("1. notify parents")
    assert intro.weighed() == intro.text and "stop new referrals" in intro.markdown()
    assert [u.kind for u in items] == ["item"] * 3 and not last.then
    question = "a center got put on probation by CCR, what do boards have to do"
    close = {u.text: 0.80 for u in units(PROBATION)} | {intro.text: 0.86, items[0].text: 0.85}
    found = [passage(PROBATION, "Probation", "probation.md")]
    lines = answer_lines(question, found, closeness=close)
    assert lines[0].unit == intro and all(line.unit != items[0] for line in lines)
    text = compose(ToolResult(text="", data=found), default_prompts(), query=question, closeness=close).text
    assert ("> When a provider is placed on probation by CCR, Boards must: — *[Probation](https://docs.example/p)* [1]\n"
            "> 1. notify parents of the corrective action status within five business days;\n"
            "> 2. stop new referrals to the provider;") in text
    assert text.count("notify parents of the corrective action") == 2  # the quote, then the passage
    # a loose list (blank lines between its items) is quoted tight: one quote, no empty quoted line
    loose = "Bring these:\n\n- a photo ID;\n\n- proof of address.\n"
    assert units(loose)[0].then == "- a photo ID;\n- proof of address."


PAYMENTS = """## Accepted payment methods

| Method | Extra charge |
|---|---|
| Cash | None |
| Credit or debit card | 2.5% processing fee, minimum $2 |

## Returned checks

- A returned (bounced) check is charged a **$35** fee.
"""


def test_a_line_is_cited_with_the_heading_it_stands_under():
    """A passage is shown with the sections around its own: a line from a neighbouring section
    is cited with that section's heading, not the passage's."""
    [cash, card, bounced] = units(PAYMENTS)
    assert (cash.heading, card.heading, bounced.heading) == ("Accepted payment methods",) * 2 + ("Returned checks",)
    assert units("A line under no heading.")[0].heading is None
    found = Passage(text="- A returned (bounced) check is charged a **$35** fee.", context=PAYMENTS,
                    source="payment-methods.md", title="Paying fees", section="Fees > Returned checks", score=1.0,
                    url="https://wiki.example/pay#returned-checks")
    text = compose(ToolResult(text="", data=[found]), default_prompts(), query="credit card processing fee minimum").text
    # the fragment is the passage's section's: the link opens the page itself
    assert ("| Credit or debit card | 2.5% processing fee, minimum $2 |\n\n"
            "— *[Accepted payment methods](https://wiki.example/pay)* [1]") in text
    text = compose(ToolResult(text="", data=[found]), default_prompts(), query="returned bounced check fee").text
    assert ("> A returned (bounced) check is charged a **$35** fee. — "
            "*[Returned checks](https://wiki.example/pay#returned-checks)* [1]") in text


FAQ = """## Accounts

**Q1: How do I stop service when I move out?**

A1: Call 48 hours ahead; a final reading is taken and the deposit is applied to the last bill.

**Q2: Can a tenant open an account without the property owner's consent?**

A2: Yes. Bring a signed lease and photo ID; no owner form is needed.

### What does a new account cost?

A $25 setup charge, added to the first bill.

Q: Is the deposit refunded? A: After 12 months of on-time payments the deposit is credited to the account in full.
"""


def test_a_line_of_a_q_and_a_page_records_the_question_it_answers():
    asked = {u.text[:3]: u.asks for u in units(FAQ)}
    assert asked["A1:"] == "**Q1: How do I stop service when I move out?**"
    assert asked["A2:"].startswith("**Q2: Can a tenant")
    assert asked["A $"] == "What does a new account cost?"  # a question heading
    assert asked["A: "] == "Q: Is the deposit refunded?"  # question and answer in one paragraph
    # a question over a whole section of cases is its title: it answers none of them alone
    section = "### Do I need a permit?\n\n" + "\n".join(f"- Case {i}: permit {i}." for i in range(12))
    assert {u.asks for u in units(section)} == {None}


def test_the_line_under_the_page_s_question_that_matches_comes_first():
    """The asker's question is closest to the page's own question, which its answer does not repeat."""
    question = "renter wants the water bill in her own name, does the landlord have to sign anything?"
    found = [passage(FAQ, "Accounts", "accounts.md")]
    by_unit = {u.text[:3]: u.text for u in units(FAQ)}
    close = {by_unit["A1:"]: 0.80, by_unit["A2:"]: 0.79, by_unit["A $"]: 0.76, by_unit["A: "]: 0.77,
             "**Q1: How do I stop service when I move out?**": 0.78,
             "**Q2: Can a tenant open an account without the property owner's consent?**": 0.90}
    [best, *_] = answer_lines(question, found, closeness=close)
    assert best.unit.text.startswith("A2:"), best.unit.text
    # by words: the page's question holds them, its answer line is picked
    [best] = answer_lines("tenant account without owner consent", found)[:1]
    assert best.unit.text.startswith("A2:"), best.unit.text


def test_a_line_of_a_q_and_a_page_is_cited_with_the_question_it_answers():
    """"A2: Yes. Bring a signed lease …" alone does not say what it answers: its question does."""
    found = Passage(text=FAQ, source="accounts.md", title="Accounts FAQ", section="Accounts", score=1.0,
                    url="https://wiki.example/accounts#accounts")
    text = compose(ToolResult(text="", data=[found]), default_prompts(), query="tenant account without owner consent").text
    assert ("> A2: Yes. Bring a signed lease and photo ID; no owner form is needed. — *[Q2: Can a tenant open an "
            "account without the property owner's consent?](https://wiki.example/accounts#accounts)* [1]") in text


def test_neighbouring_sentences_of_one_answer_are_one_quote_with_one_citation():
    """Three sentences of one FAQ answer, each with the same long citation, read as three answers."""
    page = ("**Q17: Can my provider charge fees beyond my copay?**\n\n"
            "A17: This depends on your local program's policy, which your caseworker can explain in detail. "
            "Your local program will inform you whether providers may charge parents the difference between "
            "the reimbursement rate and the provider's actual rate. A provider may only charge you this "
            "difference if the local program permits it, and must tell you in writing first.\n\n"
            "**Q18: Who pays the registration fee?**\n\nA18: Registration fees are paid by the parent.")
    found = Passage(text=page, source="copay.md", title="Copay FAQ", section="Copay", score=1.0)
    by_text = {u.text[:12]: u.text for u in units(page)}
    assert len(by_text) == 4  # three sentences of A17, one of A18
    close = {text: 0.9 for text in by_text.values()} | {by_text["A18: Registr"]: 0.5}
    text = compose(ToolResult(text="", data=[found]), default_prompts(),
                   query="is my provider allowed to ask for extra beyond my copay", closeness=close).text
    quotes = [line for line in text.splitlines() if line.startswith("> ")]
    assert len(quotes) == 1, text
    assert quotes[0].startswith("> A17: This depends") and "must tell you in writing first. — *Q17:" in quotes[0]
