"""Registry CSV -> typed facilities: types, column mapping, bad rows with line numbers."""

from __future__ import annotations

import csv

import pytest

from agent.config import Settings
from agent.facilities.registry import (
    RegistryFormatError,
    facility_point_id,
    parse_days,
    parse_hours,
    parse_registry,
    parse_registry_text,
)
from tests.conftest import SAMPLE_FACILITIES

HEADER = (
    "operation_id,operation_number,operation_type,name,address,city,zip,county,phone,issuance_type,ages_served,"
    "hours,days,capacity,special_needs,accredited,get_well_care,after_school_care,drop_in_care,pre_k,"
    "special_skills,part_time_care,transportation,email,website,last_modified,latitude,longitude"
)


def _row(num: str, name: str = "Sunny Days", *, capacity: str = "50", accredited: str = "N",
         hours: str = "07:00 AM-06:00 PM", ages: str = '"Infant, Toddler"', lat: str = "30.1") -> str:
    return (f"1,{num},Licensed Child-Care Center,{name},1 MAIN ST,AUSTIN,78702-1111,TRAVIS,512-000-0000,"
            f"Full Permit,{ages},{hours},MonTueWedThuFri,{capacity},N,{accredited},N,N,N,N,N,N,N,,,2015-01-16,"
            f"{lat},-97.7")


def test_sample_registry_is_fully_typed():
    parsed = parse_registry(SAMPLE_FACILITIES)
    assert parsed.rows == 121 and len(parsed.facilities) == 121 and parsed.errors == []
    raw = {r["operation_number"]: r for r in csv.DictReader(SAMPLE_FACILITIES.open(encoding="utf-8"))}
    for f in parsed.facilities:
        r = raw[f.operation_number]
        assert f.capacity == int(r["capacity"])
        assert f.accredited is (r["accredited"] == "Y") and f.transportation is (r["transportation"] == "Y")
        assert f.location is not None and f.location.lat == pytest.approx(float(r["latitude"]))
        assert f.zip5 == r["zip"][:5] and f.city_key == r["city"].lower()
        assert ("infant" in f.ages) is ("Infant" in r["ages_served"])
        assert ("pre-k" in f.ages) is ("Pre-Kindergarten" in r["ages_served"])
        if r["days"]:
            assert f.days == ["mon", "tue", "wed", "thu", "fri"]
    ebenezer = next(f for f in parsed.facilities if f.operation_number == "139")
    assert (ebenezer.open_minutes, ebenezer.close_minutes) == (7 * 60, 17 * 60 + 30)


def test_hours_and_days_formats():
    assert parse_hours("06:30 AM-06:00 PM") == (390, 1080)
    assert parse_hours("6:30am - 6pm") == (390, 1080)
    assert parse_hours("07:00-18:30") == (420, 1110)
    assert parse_hours("12:12 PM-05:30 PM") == (732, 1050)
    assert parse_hours("") == (None, None)
    with pytest.raises(ValueError):
        parse_hours("all day")
    assert parse_days("Mon-Fri") == ["mon", "tue", "wed", "thu", "fri"]
    assert parse_days("Sat, Sun") == ["sat", "sun"]


def test_bad_rows_are_reported_with_line_numbers_and_skipped():
    lines = [
        HEADER,                                             # line 1
        _row("100"),                                        # 2 ok
        _row("101", capacity="lots"),                       # 3 bad capacity
        _row("102", name=""),                               # 4 missing name
        _row("103", accredited="maybe"),                    # 5 bad flag
        _row("104", name='"Two\nLine Name"'),               # 6-7 ok, quoted newline
        _row("100"),                                        # 8 duplicate of line 2
        _row("105", hours="sometimes"),                     # 9 bad hours
        _row("106", lat="north"),                           # 10 bad coordinates
        _row("107", ages='"Teen"'),                         # 11 unknown age group
        _row("108") + ",extra,values",                      # 12 too many values
        _row("109"),                                        # 13 ok
    ]
    parsed = parse_registry_text("\n".join(lines) + "\n", source="bad.csv")
    assert [f.operation_number for f in parsed.facilities] == ["100", "104", "109"]
    assert parsed.rows == 11
    by_line = {e.line: e.message for e in parsed.errors}
    assert sorted(by_line) == [3, 4, 5, 8, 9, 10, 11, 12]
    assert by_line[3] == "capacity: expected a whole number, got 'lots'" and "name" in by_line[4] and "maybe" in by_line[5]
    assert "duplicate" in by_line[8] and "line 2" in by_line[8]
    assert "sometimes" in by_line[9] and "north" in by_line[10] and "Teen" in by_line[11]
    assert parsed.unparsed_numbers >= {"101", "103", "105"}


def test_column_mapping_is_configuration(tmp_path):
    """Another state's headers load through the facilities_columns setting, no code change."""
    other = tmp_path / "ok.csv"
    other.write_text(
        "License,Facility Name,Town,Postal,Parish,Ages,Open,Max,Accredited?,Lat,Lng,Region\n"
        '77-1,Bayou Kids,SHREVEPORT,71101,CADDO,"Infant, School",6:00 AM-6:00 PM,80,Yes,32.5,-93.75,NW\n',
        encoding="utf-8",
    )
    settings = Settings(
        data_dir=tmp_path / "d",
        facilities_columns={"operation_number": "License", "name": "Facility Name", "city": "Town", "zip": "Postal",
                            "county": "Parish", "ages": "Ages", "hours": "Open", "capacity": "Max",
                            "accredited": "Accredited?", "latitude": "Lat", "longitude": "Lng"},
    )
    parsed = parse_registry(other, columns=settings.facilities_columns)
    assert parsed.errors == []
    (f,) = parsed.facilities
    assert (f.operation_number, f.name, f.city_key, f.zip5, f.capacity) == ("77-1", "Bayou Kids", "shreveport", "71101", 80)
    assert f.accredited is True and f.ages == ["infant", "school"] and f.open_minutes == 360
    assert f.location is not None and f.location.lon == -93.75
    assert f.extra == {"Region": "NW"}  # unmapped columns are kept, not lost

    with pytest.raises(RegistryFormatError, match="operation_number"):
        parse_registry(other)  # default mapping: required column missing -> clear error
    with pytest.raises(RegistryFormatError, match="unknown fields"):
        parse_registry(other, columns={"licence": "License"})


def test_point_ids_are_deterministic():
    assert facility_point_id("139") == facility_point_id("139") != facility_point_id("1390")
