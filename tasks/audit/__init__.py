"""Audit: answer "why is this in the release, or why was it dropped?" from data the pipeline already has.

Every view here reads a release folder back; nothing re-runs a rule.

- ``tasks.audit.fates``: ``load_audit_log(release_dir, profile) -> AuditLog`` groups the decision log
  (``decisions.csv``) by template and works out each template's ``Fate`` (label, BBQ source,
  stereotype, in the release or dropped by which decision, samples).
- ``tasks.audit.lineage``: ``explain(query, log, profile) -> Lineage`` and ``render_lineage`` behind
  ``kobbq why ID --release DIR`` (template, BBQ template, sample ID or stereotype; an unknown ID is a
  ``UserError`` naming the closest matches).
- ``tasks.audit.report``: the HTML audit report. Entry point for the build flow::

      write_release_folder(folder, inputs, loaded, findings, release, decisions, ...) -> manifest

  writes the release's files (``tasks.release.assemble.write_release_files``), then ``audit.html``
  (``write_audit_report(release_dir, profile) -> Path``), then records its hash in the manifest. The
  report reads only files of the release folder (``decisions.csv``, ``table1.csv``, ``manifest.json``,
  ``funnel.md`` if present, and the 4-samples-a-row evaluation split for BBQ links; never the full
  sample set), takes ~0.1 s on the full release, and writes ``audit.html`` there atomically
  (temp file + ``os.replace``).
- ``tasks.audit.diff``: ``diff_template_files(old, new, profile, corrections)`` and
  ``diff_releases(old_dir, new_dir)`` behind ``kobbq diff OLD NEW``.
"""
