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
  from what the build holds in memory (``render_audit_html``), then the manifest with its hash.
- ``tasks.audit.diff``: ``diff_template_files(old, new, profile, corrections)`` and
  ``diff_releases(old_dir, new_dir)`` behind ``kobbq diff OLD NEW``.
"""
