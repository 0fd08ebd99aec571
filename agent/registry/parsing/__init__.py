"""The `/`-command parser: a registry's request in plain words -> its search arguments, no model.

spec.py     the declaration's words compiled once per registry (patterns, filler, units)
state.py    one parse in progress: the text left, the values found, the notes
counts.py   quoted names, "top 5" / "all", "lat,lon"
days.py     days of the week ("weekend care", "mon-fri", "open on sat/sun")
hours.py    "open by 6:30", "open until 7pm"
numbers.py  numbers with their units ("150+ kids"), "within 10 miles of"
tags.py     flags ("no transportation") and tags ("infants", "my 8-month-old")
places.py   places: near X, "X County", zip codes, "in X", bare names, typos
parser.py   the order the recognisers run in, and what is left as the free-text query
"""
