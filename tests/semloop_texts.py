"""What semloop adds to what an agent or a model sees: its note marker and the fixed opening of
each of its messages (every template, every language). Tests that a run stays quiet look for
these, never for the bare word `semloop`: a clone may live in a folder named `semloop`, and the
Gemini CLI sends its own install path (`<clone>/.gemini-cli/...`) to the model."""

from semloop.messages import TEMPLATES

NOTE_MARKER = "[semloop]"  # the first word of every hint semloop appends to a tool result


def _openings() -> tuple[str, ...]:
    found = {NOTE_MARKER}
    for templates in TEMPLATES.values():
        for text in templates.values():
            opening = text.split("{", 1)[0].strip()
            if opening.startswith(("semloop", NOTE_MARKER)) and len(opening) > len("semloop "):
                found.add(opening)
    return tuple(sorted(found))


OPENINGS = _openings()


def added_by_semloop(text: str) -> list[str]:
    """The texts of semloop's found in `text`: [] when semloop added nothing to it."""
    return [opening for opening in OPENINGS if opening in text]
