"""Culture profiles: everything culture-specific, loaded from ``core/profiles/<name>/<name>.toml`` into typed models.

A new culture is a new folder, not new code (docs/new-culture.md); its files in ``[files]`` are found
relative to that folder. Every value is checked against its domain (``core.domains``) and an unknown key is refused
when the profile loads, so that a typo fails with its key instead of silently changing the release."""

from __future__ import annotations

import re
import unicodedata
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, PrivateAttr, model_validator

from core.domains import (CharacterClass, Count, ExactNumber, LanguageCode, Name, Pair, Regex, ScriptName,
                          Separator, Strict, Text, among, check_regex, load_model, references_outside, refuse)
from core.errors import UserError
from core.paths import PROFILE_DIR
from core.release_profile import CardProfile, Release, Table1Note

DEFAULT_PROFILE = "ko"  # the profile of a command, a pipeline file or a flow that names none

class PaperCounts(Strict):
    """One category's row of the paper's Table 1, used only for side-by-side reports.

    A paper that does not report a column (EsBBQ reports templates and instances only) leaves it out.
    """

    sr: Count | None = None
    tm: Count | None = None
    st: Count | None = None
    nc: Count | None = None
    templates_before: Count | None = None
    templates_after: Count
    samples: Count


class Category(Strict):
    name: Name  # as written in the template files' Category column
    sample_prefix: Name  # first part of a sample_id
    display: Text  # human-readable name for reports
    bbq_categories: list[str] = Field(default_factory=list)  # English BBQ files that feed it
    paper: PaperCounts | None = None


class Condition(Strict):
    """One test of a candidate pool's query: ``field op ref``.

    ``ref`` is a literal (``'f'``), the row's bias targets (``targets``), every vocabulary word
    marked not-stereotyped (``not_stereotyped``), the row's stated gender (``stated_gender``), or a
    field of the NAME1 candidate already chosen (``NAME1.gender``). ``op`` is ``=``, ``!=`` or
    ``in``; ``=?`` is ``=`` that holds for every candidate when the reference is empty.
    """

    field: Text
    op: Literal["=", "!=", "in", "=?"]
    ref: str = Field(pattern=r"^('.*'|targets|stated_gender|vocabulary:[^=]+=.*|\w+\.\w+)$")


class Pool(Strict):
    """Where one person's candidates come from: a declarative query over a source.

    ``source``: ``targets`` (the row's bias targets), ``column:<name>`` (a list cell of the row),
    ``vocabulary`` (the row's category vocabulary, filtered by its subcategory) or
    ``proper_names``. ``otherwise`` is used when this query gives no candidates.
    """

    source: str = Field(pattern=r"^(targets|vocabulary|proper_names|column:.+)$")
    where: list[Condition] = Field(default_factory=list)
    info: str = ""  # e.g. "{gender}, {ethnicity}"; empty: the info column, else the bare value
    distinct: bool = False
    # Article forms from vocabulary columns by stated gender (e.g. {"" = "name_def", f = "f_def"}),
    # used for every -def/-indef placeholder of this pool instead of the names cell.
    article_forms: dict[str, str] = Field(default_factory=dict)
    otherwise: "Pool | None" = None


class PoolRule(Strict):
    """Which pools a template row uses: the first rule whose category/subcategory/proper match wins."""

    category: str = ""  # empty: any
    subcategory: str = ""
    proper: bool | None = None  # the row's proper-names flag; None: either
    names_cell: bool = True  # a non-empty names cell replaces both pools
    people: dict[str, Pool]  # NAME1 -> pool, NAME2 -> pool (NAME2's may refer to NAME1)


class TextFix(Strict):
    """One ordered language fix: a regular expression replaced everywhere (e.g. ``de el`` -> ``del``)."""

    pattern: str = Field(json_schema_extra={"format": "regex"})
    replace: str = Field(json_schema_extra={"format": "regex-replacement"})  # its group references (\1) exist
    literal: bool = False  # pattern is plain text, not a regular expression

    @model_validator(mode="after")
    def _compiles(self) -> "TextFix":
        """Checked when the profile loads: a pattern or a group reference that fails would fail mid-build."""
        if not self.literal:
            try:
                re.compile(check_regex(self.pattern)).sub(self.replace, "")  # a replacement is compiled before matching
            except ValueError as error:
                refuse([(("pattern",), self.pattern, str(error))])
            except re.error as error:
                refuse([(("replace",), self.replace, f"must refer only to the pattern's groups ({error})")])
        return self


class Flip(Strict):
    """One generated variant of a template row: the text fields in which the two people swap."""

    name: Text
    swap: list[str] = Field(default_factory=list, json_schema_extra=among("templates.workbook.text_fields"))


HookKind = Literal["capitalise", "occurs", "label"]  # registered functions: tasks/templates/hooks.py
# Fields the label hook makes for every instance (tasks/templates/hooks.py:stereotyped_first).
GENERATED_FIELDS = ("question_polarity", "context_condition", "context", "question", "ans0", "ans1", "ans2",
                    "answer_info.ans0", "answer_info.ans1", "answer_info.ans2", "question_type", "label")


class WorkbookFormat(Strict):
    """Workbook templates with placeholders, a vocabulary and proper names (the EsBBQ format).

    Everything the generator needs to know about the culture's files and language is here;
    what cannot be data is a named hook (``hooks``), registered in ``tasks/templates/hooks.py``.
    """

    language_suffixes: list[str]  # column-name suffixes that mark a language (["_es", "_ca"])
    vocabulary: str  # file names inside the templates folder
    proper_names: str
    vocabulary_keep_when_empty: list[str] = Field(default_factory=list)  # rows kept only when these are empty
    word_value: str = "name"  # vocabulary column holding the word
    proper_value: str = "proper_name"
    proper_text: str = "proper_name"  # the form a proper name takes in text (Catalan: with its article)
    gender_forms: dict[str, str] = Field(default_factory=dict)  # stated gender -> vocabulary column of its form
    id_column: str = "esbbq_template_id"
    label_column: str = "label"
    category_column: str = "esbbq_category"
    subcategory_column: str = "subcategory"
    targets_column: str = "stereotyped_groups"
    proper_column: str = "proper_nouns_only"
    gender_column: str = "stated_gender_info"
    names_column: str = "names"
    words_column: str = "lexical_diversity"
    bbq_id_column: str = "bbq_template_id"
    bbq_category_column: str = "bbq_category"
    # The BBQ category as the templates write it -> as BBQ's files name it (GenderIdentity -> Gender_identity).
    bbq_category_names: dict[str, str] = Field(default_factory=dict)
    info_columns: dict[str, str] = {"NAME1": "NAME1_info", "NAME2": "NAME2_info"}
    people: list[str] = ["NAME1", "NAME2"]
    text_fields: list[str] = ["ambiguous_context", "disambiguating_context", "question_negative_stereotype",
                              "question_non_negative", "answer_negative", "answer_non_negative"]
    required_cells: list[str] = ["esbbq_template_id", "esbbq_category", "ambiguous_context",
                                 "disambiguating_context", "question_negative_stereotype", "question_non_negative",
                                 "answer_negative", "answer_non_negative"]
    flips: list[Flip]
    dedup_key: list[str] = Field(json_schema_extra=among("templates.workbook.output_columns"))  # the first wins
    article_prefix: Regex = r"^[^ ']*[ ']"  # what a -def/-indef value loses to become a display name
    fixes: list[TextFix] = Field(default_factory=list)  # after capitalisation, in order
    pools: list[PoolRule]
    hooks: dict[HookKind, str]  # capitalise, occurs, label -> registered function name
    match_articles: list[str] = Field(default_factory=list)  # leading articles the occurs hook ignores
    unknown: str = "unknown"  # the third answer, untranslated in EsBBQ
    # Output fields: copied from row cells (output -> column), parsed as lists, or made by the generator.
    row_columns: dict[str, str] = Field(default_factory=dict)
    row_lists: dict[str, str] = Field(default_factory=dict)
    number_output: str = "instance_id"
    flip_output: str = "flipped"
    proper_output: str = "proper_nouns_only"
    output_columns: list[str]  # the released CSV's columns, in order
    list_columns: list[str] = Field(default_factory=list,
                                    json_schema_extra=among("templates.workbook.output_columns"))

    @model_validator(mode="after")
    def _consistent(self) -> "WorkbookFormat":
        """Names that must refer to each other do: a typo fails when the profile loads, not mid-build."""
        outputs = {*self.row_columns, *self.row_lists, self.number_output, self.flip_output, self.proper_output,
                   *GENERATED_FIELDS}
        wrong = [c for c in self.output_columns if c not in outputs]
        problems = [(("output_columns",), wrong, "must be row columns, row lists or made by the generator")] \
            if wrong else []
        problems += [(("hooks", kind), None, "missing (required)") for kind in ("occurs", "label")
                     if kind not in self.hooks]
        problems += [(("pools", i, "people"), sorted(r.people), f"must name the people {self.people}")
                     for i, r in enumerate(self.pools) if sorted(r.people) != sorted(self.people)]
        refuse(problems)
        return self

    def output_of(self, column: str) -> str:
        """The output field a row column is copied to (``label`` -> ``template_label``)."""
        return next(out for out, source in self.row_columns.items() if source == column)


class TemplateFormat(Strict):
    """How versions map to context polarity in this culture's template files.

    Two settings of one template model: explicit versions (KoBBQ: a/b/c/d rows, people swapped by
    ``swapped_versions``), or ``workbook`` (EsBBQ: the generator makes the flips itself).
    """

    versions: list[str] = ["a", "b", "c", "d"]
    labels: list[Text] = Field(["ST", "TM", "NC"], min_length=1)  # the template labels a template file may carry
    # What each label means in KoBBQ's terms (ST simply transferred, TM target-modified, NC newly
    # created), for the labelling stage; a label not listed means itself. EsBBQ: t -> ST, m -> TM, n -> NC.
    label_meanings: dict[str, Literal["ST", "TM", "NC"]] = Field(default_factory=dict,
                                                                 json_schema_extra=among("templates.labels"))
    one_bbq_link_per_template: bool = True  # all versions of a template adapt the same BBQ template
    # Disambiguating context goes against the stereotype.
    counter_biased_versions: list[str] = Field(["a", "c"], json_schema_extra=among("templates.versions"))
    # Versions that swap the two people; slot order for the fill number is then [N2, N1, ...].
    swapped_versions: list[str] = Field(["b", "d"], json_schema_extra=among("templates.versions"))
    # Lexical slots attached to person 1 / person 2 that swap together with the people: two, or none.
    person_word_slots: list[Text] = ["X1", "X2"]
    # How a disambiguated sample's context is written: the ambiguous context, this, the disambiguating one
    # (KoBBQ and EsBBQ: one space; Japanese writes none after "。").
    context_separator: str = " "
    # What may separate the items of a slot list ("[N1: a, b]", "N1: [a, b]"); the first is the one written by
    # the post-edit import, followed by ``list_separator_space``. Another separator-like character inside an item
    # (``[孫息子、孫娘]`` under a profile that accepts only ",") is an error, never one silent item.
    list_separators: list[Separator] = Field([","], min_length=1)
    list_separator_space: str = Field(" ", pattern="^ *$")
    workbook: WorkbookFormat | None = None

    @model_validator(mode="after")
    def _two_slots(self) -> "TemplateFormat":
        refuse([(("person_word_slots",), self.person_word_slots, "must be two slots (person 1's, person 2's) or none")]
               if len(self.person_word_slots) not in (0, 2) else [])
        return self

    def meaning(self, label: str) -> str:
        return self.label_meanings.get(label, label)

    @property
    def separators(self) -> tuple[str, ...]:
        return tuple(self.list_separators)

    @property
    def list_joiner(self) -> str:
        """How a generated slot list joins its items (``"a, b"``)."""
        return self.list_separators[0] + self.list_separator_space


class SurveyProfile(Strict):
    """The survey stage: the paper's filters (cut-offs compared exactly, as fractions) and wording.

    Owned by the survey stage (tasks/survey); add survey settings here, not elsewhere.
    """

    # False: this culture's benchmark had no per-question survey (EsBBQ); the pipeline's survey stages pass
    # every template through and say so.
    enabled: bool = True
    # Type 1: target when votes >= ratio x equal share (above the equal share: a target stands out).
    target_ratio: ExactNumber = Field(Fraction(2), gt=1)
    # Type 1: non-target when votes <= ratio x equal share (below it, so that no group is both).
    non_target_ratio: ExactNumber = Field(Fraction(1, 2), ge=0, lt=1)
    # Type 2: keep when the target's share of the votes for a group > this (a majority; 1 would keep none).
    type2_agreement: ExactNumber = Field(Fraction(2, 3), ge=Fraction(1, 2), lt=1)
    no_stereotype_max: ExactNumber = Field(Fraction(1, 2), ge=0, le=1)  # drop when "no stereotype" share > this
    reading_min_correct: ExactNumber = Field(Fraction(1, 2), ge=0, le=1)  # drop a template when correct rate < this
    respondents_per_question: int = Field(100, gt=0)
    # ST/NC templates of these categories get a type-1 question (all groups listed) unless the
    # template marks that its reference names the non-target group; TM templates always do.
    type1_categories: list[str] = Field(default_factory=list, json_schema_extra=among("categories.name"))
    # Type 1's equal share counts the "no stereotype" option too (the release's race targets
    # with exactly 10 of 100 votes are reproduced only with 19 counted groups + 1 = 20 options).
    count_no_stereotype_option: bool = True
    # What type 1's equal share divides by the counted options: "respondents" (people asked) or
    # "votes" (all votes cast, "no stereotype" included; the paper's wording). See
    # tasks/survey/rules.py type1_rule for what each does to the released results.
    type1_equal_share: Literal["respondents", "votes"] = "respondents"
    type1_equal_share_reason: str = ""  # why this basis was chosen; shown in funnel.md
    # Respondent quota per question (paper: balanced by gender and age): both lists, or neither (not checked).
    quota_genders: list[Text] = Field(default_factory=list)
    quota_age_bands: list[Text] = Field(default_factory=list)
    seed: int = 42  # type-2 option order in the questionnaire
    # The paper's reported effect of each rule (rule name -> text), shown beside ours in funnel.md.
    paper_effects: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _both_quotas(self) -> "SurveyProfile":
        refuse([((key,), [], "must list the quota's groups as the other quota list does (both lists, or neither)")
                for key in ("quota_genders", "quota_age_bands") if not getattr(self, key)]
               if bool(self.quota_genders) != bool(self.quota_age_bands) else [])
        return self


class RowCell(Strict):
    """One cell of a template row that the translator fills besides the texts (EsBBQ: the stated gender).

    The post-edit workbook gives it a row of its own, pre-filled from a BBQ column where BBQ has
    the same information in English, and the import writes it into the template column ``name``.
    """

    name: Text  # the template column (language-selected name, e.g. "stated_gender_info")
    help: str  # what to write; shown beside the cell and in the Instructions sheet
    bbq_column: str = ""  # the BBQ column shown as the English source ("" for none)
    per_language: bool = False  # written with the profile's language suffix (words of the language)


class TranslationProfile(Strict):
    """Machine pre-translation and post-edit settings. Owned by the translation stage (tasks/translation)."""

    # e.g. "KO", "EN-GB"; empty means the profile's language upper-cased
    deepl_target_lang: str = Field("", pattern=r"^([A-Za-z]{2,3}(-[A-Za-z]+)?)?$")
    # Labels whose BBQ templates are translated (SR ones are excluded).
    labels: list[str] = Field(["ST", "TM"], json_schema_extra=among("templates.labels"))
    formality: Literal["default", "more", "less", "prefer_more", "prefer_less"] = "default"  # "default" sends none
    # "deepl": DeepL applies the glossary; "after": terms are protected and substituted after
    # translation; "auto": ask DeepL whether the pair supports glossaries (a dry run assumes "deepl").
    glossary_mode: Literal["auto", "deepl", "after"] = "auto"
    batch_size: int = Field(50, gt=0, le=50)  # texts per request (DeepL accepts up to 50); each batch is cached
    max_network_retries: Count = 5  # deepl client retries of 429/5xx, backoff from 1 s x1.6
    # For the dry-run estimate; check your DeepL plan.
    price_per_million_characters: float = Field(25.0, ge=0, allow_inf_nan=False)
    currency: str = Field("USD", pattern="^[A-Z]{3}$")  # ISO 4217
    # Prefect Secret block read when DEEPL_AUTH_KEY is unset (Prefect's block names: a-z, 0-9, -).
    secret_block: str = Field("deepl-auth-key", pattern="^[a-z0-9-]+$")
    # The translated fields as the target template format names its columns (KoBBQ's column name ->
    # the format's, e.g. Ambiguous_context -> ambiguous_context); empty: KoBBQ's own names.
    fields: dict[str, Text] = Field(default_factory=dict)
    # Workbook formats: the cells the translator fills besides the texts (gender, proper-noun flag, groups).
    row_cells: list[RowCell] = Field(default_factory=list)

    def target_lang(self, language: str) -> str:
        return (self.deepl_target_lang or language).upper()


class LabelsProfile(Strict):
    """Categorization labelling settings. Owned by the labelling stage (tasks/labels)."""

    require_rationale: bool = True


class Particles(Strict):
    """Particle pairs chosen by whether the preceding word ends in a final consonant (batchim)."""

    enabled: bool = False
    # [form after a final consonant, form after a vowel], e.g. ["은", "는"].
    pairs: list[Pair] = Field(default_factory=list)
    # The characters of a particle the translator writes after a bare slot ("[N1]은"): the import moves them into
    # every filler of the slot's list. A regular-expression character class body (Korean: "가-힣").
    suffix_characters: CharacterClass = ""


class WritingProfile(Strict):
    """The scripts the language is written in, checked on every context, question and answer of the templates
    (``tasks.templates.scripts``): Unicode script names (Hangul, Han, Hiragana, Katakana, Latin, Arabic, Devanagari,
    Cyrillic, ...). A text mostly in another script is an error, a few foreign letters (a brand name) a warning.

    ``sentence_scripts``: where the language shares its scripts with another (Japanese and Chinese both write Han),
    the scripts every context and question has a letter of (Japanese: Hiragana or Katakana)."""

    scripts: list[ScriptName] = Field(min_length=1)
    sentence_scripts: list[str] = Field(default_factory=list, json_schema_extra=among("writing.scripts"))
    # Format characters (Cf) and spaces (Zs) the language writes, as code points ("U+200C"): any other in a cell that
    # enters a release is reported (core.text), a ZERO WIDTH SPACE an error, a NO-BREAK SPACE a warning.
    allowed_characters: list[Annotated[str, Field(pattern=r"^U\+[0-9A-F]{4,6}$")]] = Field(default_factory=list)
    # False for a language written without spaces between words (Thai, Japanese): a space inside a slot list's item
    # then probably separates two items, and is a warning.
    spaces_between_words: bool = True

    @model_validator(mode="after")
    def _allowed_characters(self) -> "WritingProfile":
        other = [code for code, char in zip(self.allowed_characters, self.allowed)
                 if unicodedata.category(char) not in ("Cf", "Zs")]
        if other:
            raise ValueError(f"allowed_characters {', '.join(other)} are not format characters (Cf) or spaces (Zs)")
        changed = [f"{code} (NFC writes U+{ord(unicodedata.normalize('NFC', char)):04X})"
                   for code, char in zip(self.allowed_characters, self.allowed)
                   if unicodedata.normalize("NFC", char) != char]  # every cell is NFC: it would never be seen
        if changed:
            raise ValueError(f"allowed_characters {', '.join(changed)}: give the character as NFC writes it")
        return self

    @property
    def allowed(self) -> str:
        return "".join(chr(int(code[2:], 16)) for code in self.allowed_characters)


class Culture(Strict):
    """How reports and decision reasons name the culture ("adapts 2 US-specific term(s) to Korea")."""

    name: str = "the target culture"  # e.g. "Korea", "Japan"
    adjective: str = "local"  # e.g. "Korean": "the Korean target groups must be found by the survey"


class EvaluationProfile(Strict):
    """How a model's free-text answer is read in this language (the paper's cascade, ``tasks.evaluation.parse``).

    The cascade's rules are the paper's; what they look for is the language's: the sentence ends that close the
    first sentence, the words that mark an answer ("답은", "答えは"), the sentence forms removed or rewritten before
    a line is compared with the choices ("입니다", "です"), and a Unicode normalisation applied first (full-width
    "Ａ" and "：" are "A" and ":" after NFKC).
    """

    sentence_ends: str = "."  # characters that end the first sentence (besides a line break)
    answer_markers: list[Text] = Field(default_factory=list)  # the text after one of these is read again
    sentence_forms: list[Pair] = Field(default_factory=list)  # (written, read as), in order
    # Words a model puts before the option, read away from the start of the first line after the sentence forms
    # (zh: "是" in "是孙女", "答案是"): a copula or "the answer is" that is not a marker (nothing follows a colon).
    answer_prefixes: list[str] = Field(default_factory=list)
    # Applied to the answer, the choices and every text of the profile (markers, forms, labels...) before the cascade
    normalise: str = Field("", pattern="^(|NFC|NFKC)$")
    # The language's own labels for A, B and C ("ก", "ข", "ค"), read as those letters where they stand alone; A, B and
    # C are always read. Empty: none.
    choice_labels: list[str] = Field(default_factory=list)
    # A prompt table in the same language for a machine without ``[files] evaluation_prompts`` (relative to the
    # profile's folder, like every culture file; ko: the embedded example's, when the released table is not beside
    # the checkout). Empty: none.
    fallback_prompts: str = ""

    @model_validator(mode="after")
    def _readable(self) -> "EvaluationProfile":
        """Labels that can be told apart, and sentence forms that leave the markers, prefixes and labels as written
        (a form rewriting ค as C turns the marker "คำตอบ:" into "Cำตอบ:", and "คำตอบ: A" then reads as C)."""
        normal = (lambda text: unicodedata.normalize(self.normalise, text)) if self.normalise else (lambda text: text)
        labels = {normal(label).casefold() for label in self.choice_labels if label.strip()}
        if self.choice_labels and (len(self.choice_labels) != 3 or len(labels) != 3 or labels & {"a", "b", "c"}):
            raise ValueError("choice_labels must be three different labels for A, B and C, which are always read "
                             "(e.g. ['ก', 'ข', 'ค'])")
        for written, read in self.sentence_forms:
            kept = [*self.answer_markers, *self.answer_prefixes, *self.choice_labels]
            changed = [text for text in kept if normal(written) in normal(text)]  # ``written`` is never empty (Pair)
            if changed:
                raise ValueError(f"sentence_forms {[written, read]} changes {changed[0]!r}: an answer holding it "
                                 "would be misread (a language's own letters go in choice_labels)")
        return self


class ProfileFiles(Strict):
    """The culture's own files, relative to the profile's folder; a missing optional file means none."""

    survey: str = "survey"  # folder: type1.j2, type2.j2, reading.j2, options.toml, groups.csv, overrides.csv
    glossary: str = "glossary.csv"  # cultural substitutions for pre-translation (source,target,note)
    corrections: str = "corrections.csv"  # known upstream errors of the template files, fixed before validation
    # The post-edit workbook's Instructions sheet, one line per row (the translator's language and slot syntax).
    postedit_instructions: str = "postedit_instructions.txt"
    # The labelling workbook's guide sheet, one row a line, a tab between cells (the annotators' language).
    labelling_guide: str = "labelling_guide.txt"
    # The test split's sample IDs, one a line in the published file's order (tasks/release/test_split.py); empty:
    # the profile lists none, and a release's test split is one fill per template row drawn with the seed.
    test_split: str = ""
    # The prompt table of ``kobbq eval`` (TSV: prompt_id, instruction, context, question, a, b, c, answer, unknown).
    evaluation_prompts: str = "evaluation_prompts.tsv"


class Profile(Strict):
    name: Name
    language: LanguageCode  # BCP-47 code of the target language
    description: str = ""
    source_language: LanguageCode = "en"
    release: Release
    templates: TemplateFormat = TemplateFormat()
    survey: SurveyProfile = SurveyProfile()
    translation: TranslationProfile = TranslationProfile()
    labels: LabelsProfile = LabelsProfile()
    particles: Particles = Particles()
    culture: Culture = Culture()
    # The language's scripts; a profile without them gets a warning that the texts' script is not checked.
    writing: WritingProfile | None = None
    evaluation: EvaluationProfile = EvaluationProfile()
    categories: list[Category] = Field(min_length=1)
    table1_notes: list[Table1Note] = Field(default_factory=list)
    card: CardProfile = CardProfile()
    files: ProfileFiles = ProfileFiles()
    _path: Path | None = PrivateAttr(None)  # the file it was loaded from (None: built in code), not a key

    @model_validator(mode="after")
    def _references(self) -> "Profile":
        """Every key marked ``among`` names what exists; categories' names and sample prefixes are their own."""
        problems = list(references_outside(self, self))
        for key in ("name", "sample_prefix"):
            values = [getattr(c, key) for c in self.categories]
            problems += [(("categories", i, key), value, "must be unique (an earlier category has it)")
                         for i, value in enumerate(values) if value in values[:i]]
        refuse(problems)
        return self

    @property
    def path(self) -> Path | None:
        return self._path

    def category(self, name: str) -> Category | None:
        return {c.name: c for c in self.categories}.get(name)

    @property
    def category_names(self) -> list[str]:
        return [c.name for c in self.categories]

    @property
    def argument(self) -> str:
        """How a printed command names this profile (``--profile ...``): a shipped profile by its name, any other
        by its file, so that a hint pasted as printed runs under this profile."""
        if self.path is None or self.path.resolve() == (PROFILE_DIR / self.name / f"{self.name}.toml").resolve():
            return self.name
        return str(self.path)

    @property
    def folder(self) -> Path:
        """The culture's folder: where the profile file is (a profile built in code has the shipped one)."""
        return self.path.parent if self.path is not None else PROFILE_DIR / self.name

    def file(self, role: str) -> Path:
        """One of the culture's files by its role in ``[files]`` (``survey``, ``glossary``, ``corrections``)."""
        return self.folder / getattr(self.files, role)

    def folder_file(self, value: str) -> Path | None:
        """A file a profile setting names, relative to the profile's folder like ``file(role)``; None when unset."""
        return (self.folder / value).resolve() if value else None

    def existing_file(self, role: str) -> Path | None:
        path = self.file(role)
        return path if path.exists() else None


def available_profiles() -> list[str]:
    return sorted(p.parent.name for p in PROFILE_DIR.glob("*/*.toml") if p.stem == p.parent.name)


def is_profile_path(name_or_path: str | Path) -> bool:
    """A profile given as a path (``path/to/xx.toml``, ``./xx``), not as a shipped profile's name (``ja``).

    A bare word is always a name, so that a folder called ``ja`` in the working directory is never taken for
    the ``ja`` profile (or fails as one)."""
    if isinstance(name_or_path, Path):
        return True
    text = str(name_or_path)
    return text.endswith(".toml") or "/" in text or "\\" in text or text.startswith(".")


def profile_file(name_or_path: str | Path) -> Path:
    """The TOML file of a shipped profile name, or of a profile path (a folder holds ``<folder name>.toml``)."""
    if not is_profile_path(name_or_path):
        path = PROFILE_DIR / str(name_or_path) / f"{name_or_path}.toml"
        if not path.exists():
            raise UserError(
                f"unknown profile {str(name_or_path)!r}; shipped profiles: {', '.join(available_profiles())}, "
                "or give the path of a .toml profile file (e.g. ./xx/xx.toml)"
            )
        return path
    path = Path(name_or_path)
    return path / f"{path.resolve().name}.toml" if path.is_dir() else path


def load_profile(name_or_path: str | Path) -> Profile:
    """Load a shipped profile by name (``ko``: ``core/profiles/ko/ko.toml``) or any profile file by path, and the
    survey options of its survey folder when it has them: every value checked against its domain now, before any
    stage runs."""
    path = profile_file(name_or_path)
    profile = load_model(Profile, path, "profile file", nfc_except=frozenset({"files"}))  # file names as written
    profile._path = path
    options = profile.file("survey") / "options.toml"
    if options.is_file():
        load_survey_options(options)
    return profile


class SurveyOptions(Strict):
    """The questionnaires' option labels (``survey/options.toml`` of a profile's folder)."""

    no_stereotype: Text  # the "no stereotype" option shown in every question, in the survey's language


def load_survey_options(path: Path) -> SurveyOptions:
    return load_model(SurveyOptions, path, "survey options file", nfc_except=frozenset())
