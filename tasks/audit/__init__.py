"""Audit: answer "why is this in the release, or why was it dropped?" from data the pipeline already has.

Every view here reads a release folder back; nothing re-runs a rule.

- ``tasks.audit.fates``: ``load_audit_log(release_dir, profile) -> AuditLog`` groups the decision log
  (``decisions.csv``) by template and works out each template's ``Fate`` (label, BBQ source,
  stereotype, in the release or dropped by which decision, samples).
- ``tasks.audit.lineage``: ``explain(query, log, profile) -> Lineage`` and ``render_lineage`` behind
  ``kobbq why ID --release DIR`` (template, BBQ template, sample ID or stereotype; an unknown ID is a
  ``UserError`` naming the closest matches).
- ``tasks.audit.report``: the HTML audit report. Entry point for the build flow::

      write_audit_report(release_dir: Path, profile: Profile) -> Path

  It reads only files of the release folder (``decisions.csv``, ``table1.csv``, ``manifest.json``,
  ``funnel.md`` if present, and the 4-samples-a-row evaluation split for BBQ links; never the full
  sample set), takes ~0.1 s on the full release, and writes ``audit.html`` there atomically
  (temp file + ``os.replace``). Call it in the staging folder after ``write_release_folder`` and
  before ``publish``; the manifest's ``outputs`` hashes are computed before it, so either add
  ``audit.html`` to the manifest after writing it or leave it out of ``outputs`` on purpose.
- ``tasks.audit.diff``: ``diff_template_files(old, new, profile, corrections)`` and
  ``diff_releases(old_dir, new_dir)`` behind ``kobbq diff OLD NEW``.
"""
