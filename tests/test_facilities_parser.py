"""The deterministic /facility parser: places, distances, ages, features, times, capacity, leftovers."""

from __future__ import annotations

import pytest

from agent.facilities.geocode import Geocoder, KnownPlaces, UnknownPlace
from agent.facilities.query_parser import parse_facility_query, parse_facility_query_explained
from agent.facilities.registry import parse_registry
from tests.conftest import SAMPLE_FACILITIES


@pytest.fixture(scope="module")
def places() -> KnownPlaces:
    return KnownPlaces.from_facilities(parse_registry(SAMPLE_FACILITIES).facilities)


def _args(text, places):
    return parse_facility_query(text, places).model_dump(exclude_defaults=True)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("infant care in San Antonio w/ transportation", {"city": "San Antonio", "ages": ["infant"], "transportation": True}),
        ("Harris County centers open by 6:30", {"county": "Harris County", "open_at": "06:30"}),
        ("drop-in care, 150+ kids", {"drop_in_care": True, "min_capacity": 150}),
        ("school-age after-school care in Bexar County",
         {"county": "Bexar County", "ages": ["school"], "after_school_care": True}),
        ("baby care within 10 miles of 78702", {"near": "78702", "radius_miles": 10.0, "ages": ["infant"]}),
        ("who is within 10 miles of Richland Hills?", {"near": "Richland Hills", "radius_miles": 10.0}),
        ("infant care near 78702", {"near": "78702", "ages": ["infant"]}),
        ("centers in 78702", {"zip": "78702"}),
        ("pre-k program in Austin", {"city": "Austin", "pre_k": True}),
        ("preschool in el paso county", {"county": "El Paso County", "ages": ["pre-k"]}),
        ("DALLAS toddlers", {"city": "Dallas", "ages": ["toddler"]}),
        ("get-well care and part time in dallas county",
         {"county": "Dallas County", "get_well_care": True, "part_time_care": True}),
        ("open at 6:30 pm in houston", {"city": "Houston", "open_at": "18:30"}),
        ("no transportation in austin", {"city": "Austin", "transportation": False}),
        ("all accredited centers", {"accredited": True, "limit": 0}),
        ("top 3 near 30.27,-97.74", {"near": "30.27,-97.74", "limit": 3}),
        ("within 8 km of Austin", {"near": "Austin", "radius_miles": 4.97}),
        ("capacity at least 200 in Lubbock", {"city": "Lubbock", "min_capacity": 200}),
        ("centers open until 7pm in dallas", {"city": "Dallas", "open_until": "19:00"}),
        ("open till 6:30 near 75201", {"near": "75201", "open_until": "18:30"}),
        ("kids 2 years old in Austin", {"city": "Austin", "ages": ["toddler"]}),
        ("my 8-month-old, in Waco", {"city": "Waco", "ages": ["infant"]}),
        ("give me 5 centers near Plano", {"near": "Plano", "limit": 5}),
        ("top 3 within 20 miles of Austin", {"near": "Austin", "radius_miles": 20.0, "limit": 3}),
        # a city named "Center" only counts after "in"; the word "centers" is filler
        ("accredited centers", {"accredited": True}),
        ("centers in Center", {"city": "Center"}),
        # leftovers: names become the query, filler words do not
        ("montessori in travis county", {"county": "Travis County", "query": "montessori"}),
        ('"Cliff Temple" in dallas', {"city": "Dallas", "query": "cliff temple"}),
        ("Ebenezer", {"query": "ebenezer"}),
    ],
)
def test_parses(text, expected, places):
    assert _args(text, places) == expected


def test_messy_text_with_everything(places):
    got = _args("  INFANTS & toddlers,, special-needs;  100+ kids / open by 6am — within 5 mi of Austin!! ", places)
    assert got == {"near": "Austin", "radius_miles": 5.0, "ages": ["infant", "toddler"], "special_needs": True,
                   "min_capacity": 100, "open_at": "06:00"}


@pytest.mark.parametrize(
    ("text", "field", "name"),
    [("infant care in Richlnd Hils", "city", "Richland Hills"), ("toddlers in sna antonio", "city", "San Antonio"),
     ("accredited in Travsi County", "county", "Travis County"), ("corpus christy drop-in", "city", "Corpus Christi")],
)
def test_typos_in_place_names_are_corrected_and_said(text, field, name, places):
    parsed = parse_facility_query_explained(text, places)
    assert getattr(parsed.args, field) == name
    assert any(name in note for note in parsed.notes)
    assert parsed.args.query is None


def test_unknown_place_is_passed_on_for_a_suggestion(places):
    args = parse_facility_query("day care in Nowhereville", places)
    assert args.city == "Nowhereville" and args.query is None
    with pytest.raises(UnknownPlace) as exc:
        Geocoder(places).resolve("Richlnd Hils xyz")
    assert "I don't know where" in str(exc.value)


def test_geocoder_sources(places):
    g = Geocoder(places)
    assert g.resolve("78702").kind == "zip"  # from the zipcodes package
    assert g.resolve("Travis County").name == "Travis County"  # registry centroid
    assert g.resolve("Round Rock, TX").kind == "city"  # not in the registry: state gazetteer
    with pytest.raises(UnknownPlace) as exc:
        g.resolve("Richlnd Hils")
    assert exc.value.suggestions[0] == "Richland Hills"


def test_empty_text_parses_to_no_criteria(places):
    assert not parse_facility_query("", places).has_criteria()
    assert not parse_facility_query("care centers please", places).has_criteria()


WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("weekend care in Harris County", {"county": "Harris County", "days": ["Sat", "Sun"]}),
        ("open saturdays near 78702", {"near": "78702", "days": ["Sat"]}),
        ("open on Saturdays in Houston", {"city": "Houston", "days": ["Sat"]}),
        ("sundays in Austin", {"city": "Austin", "days": ["Sun"]}),
        ("infant care Saturday and Sunday in Austin", {"city": "Austin", "ages": ["infant"], "days": ["Sat", "Sun"]}),
        ("open on weekends", {"days": ["Sat", "Sun"]}),
        ("mon-fri toddlers in Dallas", {"city": "Dallas", "ages": ["toddler"], "days": WEEKDAYS}),
        ("weekdays in Dallas", {"city": "Dallas", "days": WEEKDAYS}),
        ("Monday through Friday in Waco", {"city": "Waco", "days": WEEKDAYS}),
        ("open mon to sat", {"days": [*WEEKDAYS, "Sat"]}),
        ("open sat/sun in austin", {"city": "Austin", "days": ["Sat", "Sun"]}),
        ("sat/sun toddlers", {"ages": ["toddler"], "days": ["Sat", "Sun"]}),
        ("open on sun near 78702", {"near": "78702", "days": ["Sun"]}),
        ("open sat and sun", {"days": ["Sat", "Sun"]}),
        # a time after the days still reads as a time
        ("open on weekends until 7pm in dallas", {"city": "Dallas", "open_until": "19:00", "days": ["Sat", "Sun"]}),
        ("open by 6:30 on saturdays", {"open_at": "06:30", "days": ["Sat"]}),
        # "sun"/"sat" inside names are not days
        ("Sunset Ave", {"query": "sunset ave"}),
        ("Sun Valley Montessori", {"query": "sun valley montessori"}),
        ("centers on Sun Valley Dr in Austin", {"city": "Austin", "query": "on sun valley dr"}),
        ('"Sunday School" in Austin', {"city": "Austin", "query": "sunday school"}),
        ("satellite campus in Austin", {"city": "Austin", "query": "satellite campus"}),
    ],
)
def test_parses_days(text, expected, places):
    assert _args(text, places) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("guardería para bebés en Austin", {"city": "Austin", "ages": ["infant"]}),
        ("guardería sin transporte en Dallas", {"city": "Dallas", "transportation": False}),
        ("cuidado después de la escuela para niños en edad escolar en Houston",
         {"city": "Houston", "after_school_care": True, "ages": ["school"]}),
        ("preescolar con necesidades especiales en El Paso", {"city": "El Paso", "ages": ["pre-k"], "special_needs": True}),
        ("nhà trẻ cho em bé ở Dallas", {"city": "Dallas", "ages": ["infant"]}),
        ("trẻ mới biết đi, có đưa đón, ở Houston", {"city": "Houston", "ages": ["toddler"], "transportation": True}),
    ],
)
def test_spanish_and_vietnamese_ages_and_services_are_read_from_the_shipped_words(text, expected, places):
    """agent/data/facility_words.yaml: no Spanish or Vietnamese word in the parser's code."""
    parsed = parse_facility_query_explained(text, places)
    assert parsed.args.model_dump(exclude_defaults=True) == expected
    assert parsed.leftover == ""  # the other words are the languages' filler, not a name
