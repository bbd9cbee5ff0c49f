"""A small DeepL-compatible HTTP server for tests and for recording the example cache.

It speaks just enough of the DeepL API v2 for the official ``deepl`` client: ``/v2/translate``
(JSON body, ``billed_characters`` in every translation), ``/v2/usage``, ``/v2/languages``,
``/v2/glossary-language-pairs`` and ``/v2/glossaries``. The "translation" is deterministic:
each English word becomes syllables derived from a hash of the word, XML tags pass through
unchanged, and a glossary (when given) replaces its terms first. The words are written in the
target language's script (``SCRIPTS``: Hangul into Korean, katakana into Japanese, Han into Chinese,
Arabic, Hebrew, Greek, Cyrillic, Thai), else in Latin syllables (``ES``: pseudo-Spanish).

What it lists is DeepL's own: ``/v2/languages?type=target`` every target language DeepL's
documentation lists today (``TARGET_LANGUAGES``, ``ZH`` beside ``ZH-HANS`` and ``ZH-HANT``); beta
languages, such as Catalan, are not in that list. ``/v2/glossary-language-pairs`` every ordered pair
of DeepL's glossary languages (``GLOSSARY_LANGUAGES``), by base code as DeepL writes them (``en`` ->
``zh``, never ``zh-hans``). Billing is DeepL's: with ``tag_handling`` the characters of the XML tags
are not billed. Faults are switched on per test: an HTTP status for the next N requests (429, 503,
456, 403), a delay, a quota in characters, or dropping the first placeholder tag of every translation.

Run it by hand with ``python tests/fake_deepl.py --port 8765``.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

FAKE_KEY = "fake-key-0000:fx"
STOP_POLL = 0.05  # seconds between serve_forever's checks for stop(): its default 0.5 s is each test's wait at the end
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
_TAG_OR_TEXT = re.compile(r"(<[^>]+>|&[a-z]+;|&#[0-9]+;)")  # tags and XML entities pass through
_PLACEHOLDER_TAG = re.compile(r'<ph\s+n="[^"]*"\s*/>')


_CONSONANTS, _VOWELS = "bcdfglmnprstv", "aeiou"
_KATAKANA = [chr(c) for c in range(0x30A2, 0x30F3) if chr(c) not in "ァィゥェォッャュョヮヰヱ"]


def _letters(first: int, last: int) -> list[str]:
    return [chr(c) for c in range(first, last + 1) if chr(c).isalpha()]


# Target language (base code) -> the letters a fake word is made of, in that language's script.
SCRIPTS = {
    "JA": _KATAKANA, "ZH": _letters(0x4E00, 0x4FFF), "AR": _letters(0x0627, 0x064A), "HE": _letters(0x05D0, 0x05EA),
    "EL": _letters(0x03B1, 0x03C9), "RU": _letters(0x0430, 0x044F), "UK": _letters(0x0430, 0x044F),
    "BG": _letters(0x0430, 0x044F), "TH": _letters(0x0E01, 0x0E2E),
}

# The translation target languages of DeepL's documentation ("Languages supported", DeepLcom/api-docs
# docs/getting-started/supported-languages.mdx; HE, TH and VI joined the /languages endpoint in Q4 2025 per the
# release notes). The 75+ beta languages (Catalan among them) need enable_beta_languages and are not listed.
TARGET_LANGUAGES = [
    ("AR", "Arabic", False), ("BG", "Bulgarian", False), ("CS", "Czech", False), ("DA", "Danish", False),
    ("DE", "German", True), ("EL", "Greek", False), ("EN-GB", "English (British)", False),
    ("EN-US", "English (American)", False), ("ES", "Spanish", True), ("ES-419", "Spanish (Latin American)", True),
    ("ET", "Estonian", False), ("FI", "Finnish", False), ("FR", "French", True), ("HE", "Hebrew", False),
    ("HU", "Hungarian", False), ("ID", "Indonesian", False), ("IT", "Italian", True), ("JA", "Japanese", True),
    ("KO", "Korean", False), ("LT", "Lithuanian", False), ("LV", "Latvian", False), ("NB", "Norwegian Bokmål", False),
    ("NL", "Dutch", True), ("PL", "Polish", True), ("PT-BR", "Portuguese (Brazilian)", True),
    ("PT-PT", "Portuguese (European)", True), ("RO", "Romanian", False), ("RU", "Russian", True),
    ("SK", "Slovak", False), ("SL", "Slovenian", False), ("SV", "Swedish", False), ("TH", "Thai", False),
    ("TR", "Turkish", False), ("UK", "Ukrainian", False), ("VI", "Vietnamese", False),
    ("ZH", "Chinese (simplified)", False), ("ZH-HANS", "Chinese (simplified)", False),
    ("ZH-HANT", "Chinese (traditional)", False),
]
# The languages of DeepL's glossaries, by base code: "glossaries now work for all languages DeepL supports"
# (DeepLcom/api-docs api-reference/glossaries.mdx, "Listing language pairs"), i.e. every source language of
# supported-languages.mdx. /v2/glossary-language-pairs lists every ordered pair of two of them.
GLOSSARY_LANGUAGES = ["ar", "bg", "cs", "da", "de", "el", "en", "es", "et", "fi", "fr", "he", "hu", "id", "it", "ja",
                      "ko", "lt", "lv", "nb", "nl", "pl", "pt", "ro", "ru", "sk", "sl", "sv", "th", "tr", "uk", "vi",
                      "zh"]
GLOSSARY_PAIRS = [(source, target) for source in GLOSSARY_LANGUAGES for target in GLOSSARY_LANGUAGES if source != target]
_MARKUP = re.compile(r"<[^>]*>")


def fake_word(word: str, target_lang: str = "KO") -> str:
    """A stable rendering of one English word: 1-3 Hangul syllables (KO), letters of the target's script
    (``SCRIPTS``), else Latin syllables."""
    digest = hashlib.sha256(word.lower().encode("utf-8")).digest()
    count = 1 + digest[0] % 3
    base = target_lang.upper().split("-")[0]
    if base in SCRIPTS:
        letters = SCRIPTS[base]
        return "".join(letters[digest[1 + i] % len(letters)] for i in range(count + 1))
    if base != "KO":
        return "".join(_CONSONANTS[digest[1 + 2 * i] % 13] + _VOWELS[digest[2 + 2 * i] % 5] for i in range(count))
    return "".join(chr(0xAC00 + int.from_bytes(digest[1 + 2 * i:3 + 2 * i], "big") % 11172) for i in range(count))


def billed_characters(text: str, tag_handling: str | None) -> int:
    """DeepL bills the characters translated; with tag handling, not those of the tags (an entity is one)."""
    if not tag_handling:
        return len(text)
    return len(html.unescape(_MARKUP.sub("", text)))


def fake_translate(text: str, glossary: dict[str, str], target_lang: str = "KO") -> str:
    """Glossary terms first (whole words, any case), then every remaining English word; tags untouched."""
    pieces = _TAG_OR_TEXT.split(text)
    out = []
    for piece in pieces:
        if _TAG_OR_TEXT.fullmatch(piece):
            out.append(piece)
            continue
        protected: list[str] = []
        for source, target in sorted(glossary.items(), key=lambda kv: -len(kv[0])):
            def keep(_match: re.Match[str], target: str = target) -> str:
                protected.append(target)
                return f"\x00{len(protected) - 1}\x00"
            piece = re.sub(r"(?<![\w-])" + re.escape(source) + r"(?![\w-])", keep, piece, flags=re.IGNORECASE)
        piece = _WORD.sub(lambda m: fake_word(m.group(0), target_lang), piece)
        out.append(re.sub(r"\x00(\d+)\x00", lambda m: protected[int(m.group(1))], piece))
    return "".join(out)


@dataclass
class FakeState:
    auth_key: str = FAKE_KEY
    fail_status: int | None = None  # answer this status ...
    fail_times: int = 0  # ... for this many requests
    delay_seconds: float = 0.0
    quota_characters: int | None = None  # 456 once a request would go past this many billed characters
    drop_placeholder: bool = False
    glossary_pairs: list[tuple[str, str]] = field(default_factory=lambda: list(GLOSSARY_PAIRS))
    billed_characters: int = 0
    translate_requests: int = 0
    texts_received: list[str] = field(default_factory=list)
    glossaries: dict[str, dict] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fail(self, status: int, times: int = 1) -> None:
        self.fail_status, self.fail_times = status, times


class _Handler(BaseHTTPRequestHandler):
    server: "FakeDeepLServer"

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def _send(self, status: int, payload: object) -> None:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _body(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return {}
        if "json" in (self.headers.get("Content-Type") or ""):
            return json.loads(raw)
        return {k: v if len(v) > 1 else v[0] for k, v in parse_qs(raw.decode("utf-8")).items()}

    def _gate(self) -> bool:
        """Auth and switched-on faults; True when the request may proceed."""
        state = self.server.state
        if state.delay_seconds:
            time.sleep(state.delay_seconds)
        if self.headers.get("Authorization") != f"DeepL-Auth-Key {state.auth_key}":
            self._send(403, {"message": "Wrong endpoint or invalid auth key"})
            return False
        with state.lock:
            if state.fail_times > 0 and state.fail_status is not None:
                state.fail_times -= 1
                status = state.fail_status
            else:
                status = None
        if status is not None:
            self._send(status, {"message": f"fake fault {status}"})
            return False
        return True

    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        if not self._gate():
            return
        state = self.server.state
        url = urlparse(self.path)
        query = {**{k: v[0] for k, v in parse_qs(url.query).items()}, **self._body()}  # the client sends a form body
        if url.path == "/v2/usage":
            limit = state.quota_characters if state.quota_characters is not None else 500_000
            self._send(200, {"character_count": state.billed_characters, "character_limit": limit})
        elif url.path == "/v2/languages":
            if query.get("type") == "target":
                self._send(200, [{"language": code, "name": name, "supports_formality": formality}
                                 for code, name, formality in TARGET_LANGUAGES])
            else:
                self._send(200, [{"language": "EN", "name": "English"}])
        elif url.path == "/v2/glossary-language-pairs":
            self._send(200, {"supported_languages": [{"source_lang": s, "target_lang": t}
                                                     for s, t in state.glossary_pairs]})
        elif url.path.startswith("/v2/glossaries/"):
            glossary = state.glossaries.get(url.path.rsplit("/", 1)[-1])
            self._send(200, glossary["info"]) if glossary else self._send(404, {"message": "not found"})
        else:
            self._send(404, {"message": f"no such endpoint {url.path}"})

    def do_POST(self) -> None:  # noqa: N802
        if not self._gate():
            return
        state = self.server.state
        body = self._body()
        if self.path == "/v2/glossaries":
            pair = (str(body["source_lang"]).lower(), str(body["target_lang"]).lower())
            if pair not in state.glossary_pairs:
                self._send(400, {"message": "Unsupported glossary language pair"})
                return
            entries = dict(line.split("\t", 1) for line in str(body["entries"]).splitlines() if "\t" in line)
            glossary_id = f"fake-glossary-{len(state.glossaries) + 1}"
            info = {"glossary_id": glossary_id, "name": body["name"], "ready": True,
                    "source_lang": pair[0], "target_lang": pair[1],
                    "creation_time": "2024-01-01T00:00:00.000000Z", "entry_count": len(entries)}
            state.glossaries[glossary_id] = {"info": info, "entries": entries}
            self._send(201, info)
        elif self.path == "/v2/translate":
            texts = body.get("text") or []
            texts = [texts] if isinstance(texts, str) else list(texts)
            billed = sum(billed_characters(t, body.get("tag_handling")) for t in texts)
            with state.lock:
                if state.quota_characters is not None and state.billed_characters + billed > state.quota_characters:
                    self._send(456, {"message": "Quota exceeded"})
                    return
                state.billed_characters += billed
                state.translate_requests += 1
                state.texts_received.extend(texts)
            glossary_id = body.get("glossary_id")
            entries = state.glossaries[glossary_id]["entries"] if glossary_id in state.glossaries else {}
            translations = []
            for text in texts:
                out = fake_translate(text, entries, str(body.get("target_lang") or "KO"))
                if state.drop_placeholder:
                    out = _PLACEHOLDER_TAG.sub("", out, count=1)
                translations.append({"detected_source_language": "EN", "text": out,
                                     "billed_characters": billed_characters(text, body.get("tag_handling"))})
            self._send(200, {"translations": translations})
        else:
            self._send(404, {"message": f"no such endpoint {self.path}"})


class FakeDeepLServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.state = FakeState()
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start(self) -> "FakeDeepLServer":
        self._thread = threading.Thread(target=self.serve_forever, args=(STOP_POLL,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    server = FakeDeepLServer(args.port)
    print(f"fake DeepL on {server.url} (key {FAKE_KEY})", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
