"""A tiny language guesser for the KB's languages (English, Spanish, Vietnamese).

Diacritics that only Vietnamese uses plus stopword counts are enough to tell these apart on a
document or a question; no model to download. Anything else reports as "und" only when no
signal at all is found, never a wrong third language.
"""

from __future__ import annotations

import re
import unicodedata

# Letters with marks that Vietnamese uses and Spanish does not (base vowels with horn/breve/
# circumflex, d-stroke, and tone marks under/hook above).
_VI_CHARS = set("ăâđêôơưạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ")
_ES_CHARS = set("ñ¿¡")

_WORD = re.compile(r"[^\W\d_]+")

_STOP = {
    "en": set(
        "the and of to is in for with that on are be or this by as it from at what how can "
        "an do does you your if not will which have has who when".split()
    ),
    "es": set(
        "el la los las de del que en y para con por una un es se al lo como su sus más "
        "qué cuál cómo cuando puede pueden son está también o no le".split()
    ),
    "vi": set(
        "của và là có không được cho các những trong với một này khi thì để người ở đã "
        "từ như phải vào cũng về hay nào gì bao nhiêu".split()
    ),
}

LANGUAGES = ("en", "es", "vi")


def detect_language(text: str, default: str = "en") -> str:
    """Best guess among en/es/vi; `default` when the text carries no signal (e.g. "TX3C?")."""
    sample = unicodedata.normalize("NFC", text[:20000].lower())
    words = _WORD.findall(sample)
    if not words:
        return default
    vi_marks = sum(1 for ch in sample if ch in _VI_CHARS)
    scores = {lang: sum(1 for w in words if w in stop) for lang, stop in _STOP.items()}
    scores["vi"] += vi_marks
    scores["es"] += 2 * sum(1 for ch in sample if ch in _ES_CHARS)
    best = max(scores, key=lambda k: scores[k])
    if scores[best] == 0:
        return default
    # A Vietnamese-titled document whose body is mostly English is English for search purposes.
    return best
