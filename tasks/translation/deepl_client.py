"""DeepL behind a small ``Translator`` interface: the live client, and a replay of a recorded cache.

The ``deepl`` client retries rate limits and server errors itself; what cannot be retried raises
``TranslationStopped`` (its message never holds the key), and ``pretranslate`` keeps every batch already answered."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from core.errors import UserError, redact
from tasks.translation.cache import CachedTranslation, RequestSettings
from tasks.translation.glossary import Glossary

KEY_VARIABLE = "DEEPL_AUTH_KEY"
SERVER_VARIABLE = "DEEPL_SERVER_URL"


class TranslationStopped(Exception):
    """DeepL cannot go on (quota, key, retries exhausted); what was translated so far is kept."""


@dataclass
class DeepLTranslator:
    """The live DeepL API (or any DeepL-compatible server at ``server_url``)."""

    auth_key: str
    server_url: str | None = None
    sends: bool = True  # it reaches DeepL (a replay does not: only the cache answers)

    def __post_init__(self) -> None:
        if not self.auth_key:
            raise UserError(f"no DeepL key: set {KEY_VARIABLE} (or use --dry-run / a recorded cache)")
        self._client = _deepl().Translator(self.auth_key, server_url=self.server_url or None)

    def __repr__(self) -> str:  # never show the key
        return f"DeepLTranslator(server_url={self.server_url!r})"

    @contextmanager
    def _asking(self) -> Iterator[None]:
        """DeepL's refusals as ``TranslationStopped``, the key redacted from the message."""
        deepl = _deepl()
        try:
            yield
        except deepl.DeepLException as exc:
            text = redact(str(exc), self.auth_key)
            if isinstance(exc, deepl.QuotaExceededException):
                raise TranslationStopped(f"DeepL quota exhausted ({text})") from None
            if isinstance(exc, deepl.AuthorizationException):
                raise TranslationStopped(f"DeepL refused the key ({text})") from None
            raise TranslationStopped(f"DeepL did not answer after retries ({text})") from None

    def glossary_supported(self, source_lang: str, target_lang: str) -> bool:
        """Whether DeepL can apply a glossary for this pair (else terms are substituted after translation). DeepL lists
        glossary pairs by base language (``en``, ``zh``): a glossary for ``zh`` serves ``ZH-HANS`` and ``ZH-HANT`` as
        one for ``en`` serves ``EN-GB`` (the client creates it without the variant too)."""
        with self._asking():
            pairs = self._client.get_glossary_languages()
        wanted = (base_language(source_lang), base_language(target_lang))
        return any((base_language(p.source_lang), base_language(p.target_lang)) == wanted for p in pairs)

    def target_supported(self, target_lang: str) -> bool:
        """Whether DeepL translates into this language at all (Catalan, for one, is not in its list)."""
        with self._asking():
            languages = self._client.get_target_languages()
        wanted, codes = target_lang.upper(), {lang.code.upper() for lang in languages}
        # "EN" is accepted where DeepL lists only its variants EN-GB, EN-US
        return wanted in codes or any(code.startswith(f"{wanted}-") for code in codes)

    def create_glossary(self, glossary: Glossary, source_lang: str, target_lang: str) -> str:
        """Upload the glossary and return its id."""
        with self._asking():
            return self._client.create_glossary(f"kobbq-{glossary.fingerprint}", source_lang, target_lang,
                                                glossary.targets).glossary_id

    def translate(self, sents: list[str], settings: RequestSettings, glossary_id: str | None) -> list[CachedTranslation]:
        """Translate texts already protected as XML; one result per text, in order."""
        options = dict(settings.options)
        with self._asking():
            results = self._client.translate_text(
                sents, source_lang=settings.source_lang, target_lang=settings.target_lang,
                tag_handling=options.get("tag_handling"),
                formality=None if options.get("formality", "default") == "default" else options["formality"],
                glossary=glossary_id or None)
        return [CachedTranslation(r.text, int(r.billed_characters)) for r in results]


@dataclass
class ReplayTranslator:
    """Only the recorded cache: every text not in it is left untranslated and reported (``pretranslate`` never sends it
    anything, since ``sends`` is False; how the glossary was applied comes from the cache's record)."""

    sends: bool = False

    def glossary_supported(self, source_lang: str, target_lang: str) -> bool:
        raise TranslationStopped("a replay cannot ask DeepL which glossary pairs it supports")

    def create_glossary(self, glossary: Glossary, source_lang: str, target_lang: str) -> str:
        return ""

    def target_supported(self, target_lang: str) -> bool:
        return True  # a replay sends nothing; what is not recorded is reported as left to translate

    def translate(self, sents: list[str], settings: RequestSettings, glossary_id: str | None) -> list[CachedTranslation]:
        raise TranslationStopped(f"{len(sents)} text(s) are not in the recorded translation cache")


Translator = DeepLTranslator | ReplayTranslator


def base_language(code: str) -> str:
    """``ZH-HANS`` -> ``zh``, ``en-US`` -> ``en``: the language without its variant, as glossary pairs name it."""
    return code.split("-", 1)[0].lower()


def translator_for(auth_key: str | None) -> Translator:
    """Live DeepL with a key (``DEEPL_SERVER_URL`` may point elsewhere); without one, a replay of the cache."""
    return DeepLTranslator(auth_key, os.environ.get(SERVER_VARIABLE) or None) if auth_key else ReplayTranslator()


def _deepl():  # noqa: ANN202 (the deepl module)
    """The deepl client library, imported when DeepL is talked to, not by every command loading these stages."""
    import deepl

    return deepl


def set_network_retries(retries: int) -> None:
    """How often the deepl client retries 429/5xx (backoff 1 s x1.6); a process-wide client setting."""
    _deepl().http_client.max_network_retries = retries
