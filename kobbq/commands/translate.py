"""``kobbq translate``: DeepL pre-translation of the ST/TM templates (its help says the rest)."""

from __future__ import annotations

import argparse
from pathlib import Path

from core.paths import DEFAULT_BUILD_DIR
from core.pipeline_file import LabelsSection, PipelineConfig, TranslationSection
from core.errors import UserError
from kobbq.arguments import add_profile, add_quiet, blank, profile_of
from kobbq.in_prefect import decisions_written, run_alone


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "translate", help="pre-translate ST/TM BBQ templates with DeepL (cached; --dry-run shows the cost)",
        description="Key: DEEPL_AUTH_KEY (or the profile's Prefect Secret block); DEEPL_SERVER_URL points the "
                    "client at another server. The key is never printed.")
    add_common(parser)
    parser.add_argument("--dry-run", action="store_true", help="count characters and estimate the cost; no call")
    parser.add_argument("--replay", action="store_true", help="use only the recorded cache (no network, no key)")
    add_quiet(parser)
    parser.set_defaults(handler=run)


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bbq", type=Path, required=True, help="folder of BBQ 'new_templates - <Category>.csv' "
                                                                "files (or one file)")
    parser.add_argument("--labels", type=Path, required=True,
                        help="CSV subject,label (bbq:<Category>:<Q_id>,ST|TM|SR) or a labelling decision log")
    parser.add_argument("--out", type=Path, default=DEFAULT_BUILD_DIR / "translation",
                        help="output folder (default: %(default)s)")
    parser.add_argument("--cache", type=Path, default=None, help="translation cache (default: <out>/"
                                                                 "translation_cache.sqlite)")
    parser.add_argument("--glossary", type=Path, default=None,
                        help="glossary CSV source,target,note (default: the profile folder's glossary.csv)")
    add_profile(parser)


def run(args: argparse.Namespace) -> int:
    # The translation stage and its libraries (pandas, deepl), loaded when the command runs, not for --help.
    from tasks.translation import glossary, pretranslate, pretranslate_stage

    profile = profile_of(args)
    terms = glossary.load_glossary(args.glossary) if args.glossary else glossary.profile_glossary(profile)
    chosen, _ = pretranslate_stage.translatable_templates(args.bbq, args.labels, profile)
    cache = args.cache or args.out / pretranslate_stage.CACHE_FILE
    estimate = pretranslate.dry_run(chosen, cache, profile, terms)
    print(estimate.render(dry_run=args.dry_run))
    if args.dry_run:
        return 0
    if args.replay and estimate.segments_to_send:  # before Prefect starts: running it again cannot help
        raise UserError(f"{estimate.segments_to_send} of {estimate.segments} segment(s) are not in the translation "
                        "cache, and a replay sends nothing to DeepL; run without --replay, with DEEPL_AUTH_KEY set, to "
                        f"pay for them ({estimate.characters_to_send} characters, about {estimate.estimated_cost:.2f} "
                        f"{estimate.currency})", cache)
    if not args.replay:
        pretranslate_stage.check_target_language(profile)  # before Prefect starts (5-15 s): a language DeepL lacks is one error
    return run_stage(args, profile, replay=args.replay)


def run_stage(args: argparse.Namespace, profile, replay: bool) -> int:
    """The pretranslate stage alone: drafts, workbooks and the machine-translated twin in ``--out``."""
    config = PipelineConfig(profile=profile.argument, labels=LabelsSection(bbq=str(args.bbq)),
                            translation=TranslationSection(cache=blank(args.cache), glossary=blank(args.glossary)))
    output = run_alone("pretranslate", config, profile, args.out, args,
                       given={("labels", "labels"): args.labels}, offline=replay)
    c = output.counts
    print(f"{c['rows']} rows, {c['segments']} segments: {c['chars_billed']} characters billed now, "
          f"{c['chars_from_cache']} from the cache; {c['placeholder_errors']} placeholder problem(s) flagged")
    for path in sorted(output.outputs["workbooks"].glob("*.xlsx")):
        print(f"wrote {path}")
    if "mt_templates" in output.outputs:
        print(f"wrote {output.outputs['mt_templates']}")
    print(f"wrote {decisions_written('pretranslate', args.out)}")
    return 0

