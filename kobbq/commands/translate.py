"""``kobbq translate``: DeepL pre-translation of the ST/TM templates (``--dry-run`` first).

The dry run prints what would be sent and its estimated cost, with no call. A real run
sends only what the cache (``<out>/translation_cache.sqlite``) does not have; if DeepL stops
it (quota, key), everything answered is kept and the same command resumes. Once every
segment is drafted the post-edit workbooks and ``mtBBQ_templates.tsv`` are written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from core.paths import DEFAULT_BUILD_DIR
from kobbq.arguments import add_profile, profile_of
from tasks.translation.cost import dry_run
from tasks.translation.glossary import load_glossary, profile_glossary
from tasks.translation.pretranslate_stage import CACHE_FILE, check_target_language, translatable_templates


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "translate", help="pre-translate ST/TM BBQ templates with DeepL (cached; --dry-run shows the cost)",
        description="Key: DEEPL_AUTH_KEY (or the profile's Prefect Secret block); DEEPL_SERVER_URL points the "
                    "client at another server. The key is never printed.")
    add_common(parser)
    parser.add_argument("--dry-run", action="store_true", help="count characters and estimate the cost; no call")
    parser.add_argument("--replay", action="store_true", help="use only the recorded cache (no network, no key)")
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
    profile = profile_of(args)
    glossary = load_glossary(args.glossary) if args.glossary else profile_glossary(profile)
    chosen, _ = translatable_templates(args.bbq, args.labels, profile)
    cache = args.cache or args.out / CACHE_FILE
    estimate = dry_run(chosen, cache, profile, glossary)
    print(estimate.render(dry_run=args.dry_run))
    if args.dry_run:
        return 0
    if not args.replay:
        check_target_language(profile)  # before Prefect starts (5-15 s): a language DeepL lacks is one error
    return run_flow(args, replay=args.replay)


def run_flow(args: argparse.Namespace, replay: bool) -> int:
    from flows.translate import translate_flow  # Prefect, once kobbq.cli has set its settings; not for --dry-run

    result = translate_flow(bbq_path=args.bbq, labels_path=args.labels, out=args.out, profile_name=args.profile,
                            replay=replay, glossary_path=args.glossary, cache_path=args.cache)
    print(f"{result.rows} rows, {result.segments} segments: {result.chars_billed} characters billed now, "
          f"{result.chars_from_cache} from the cache; {result.flagged} placeholder problem(s) flagged")
    if result.stopped:
        print(f"stopped: {result.stopped}; run the same command again to resume")
        return 1
    for path in result.workbooks:
        print(f"wrote {path}")
    if result.mt_templates:
        print(f"wrote {result.mt_templates}")
    print(f"wrote {result.decisions_path}")
    return 0
