"""What a profile says about its release rather than about its culture's process: the release's name, layout and
unknown expression (``[release]``), the curated notes on Table 1's differences from the paper (``[[table1_notes]]``)
and what the dataset card says (``[card]``). Part of the profile's schema (``core.profile.Profile``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from core.domains import Count, LanguageCode, ReleaseName, Strict, Text, among


class Release(Strict):
    name: ReleaseName  # the release folder's name and its files' prefix, e.g. KoBBQ_all_samples.tsv
    # The "cannot be determined" choice written into the release (a blank one would match any blank answer).
    unknown_expression: Text
    # Other phrasings that mean "unknown": when scoring, an answer naming one of them is the prompt's unknown option
    # (tasks.evaluation.parse.read_as_unknown). ko: none, so that scoring is the paper's.
    unknown_expressions: list[Text] = Field(default_factory=list)
    seed: int = 42
    paper_total_samples: Count | None = None
    paper_reference: str = ""
    # "samples-tsv": one all-samples TSV and a test split (KoBBQ's release); "per-category-csv": one
    # <Category>.full.csv per category in the workbook format's output columns (EsBBQ's release).
    layout: Literal["samples-tsv", "per-category-csv"] = "samples-tsv"


class Table1Note(Strict):
    """A curated explanation of one difference from the paper's Table 1, shown only when it applies.

    ``ours`` is the value the note explains: if a later input changes the count, the note no
    longer matches and the difference shows as unexplained again, instead of a stale excuse.
    """

    category: str = Field(json_schema_extra=among("categories.name"))
    column: Literal["tm", "st", "nc", "templates_after", "samples"]
    ours: Count
    explained: bool  # False: the difference is known but the public inputs do not explain it
    note: str


class CardProfile(Strict):
    """What a release's dataset card (its ``README.md``, in the Hugging Face Hub's format) says about the
    culture's benchmark: licence, languages, the paper the culture follows. Nothing here changes a sample.

    A profile without ``[card]`` still gets a card: its language, licence "unknown", and no citation (the
    card says so)."""

    pretty_name: str = ""  # default: the release name
    # A Hub licence id (mit, apache-2.0, cc-by-4.0, other, unknown).
    license: str = Field("unknown", pattern=r"^[a-z0-9][a-z0-9.+-]*$")
    license_note: str = ""  # what the licence covers and where it comes from
    languages: list[LanguageCode] = Field(default_factory=list)  # ISO 639 codes; default: the profile's language
    task_categories: list[str] = ["multiple-choice", "question-answering"]
    task_ids: list[str] = ["multiple-choice-qa"]
    tags: list[str] = ["social-bias", "bbq"]
    paper: str = ""  # the paper this culture's process follows, in one line
    paper_url: str = Field("", pattern=r"^(https?://\S+)?$")
    citation: str = ""  # its BibTeX entry
