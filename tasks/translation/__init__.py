"""The translation stages: DeepL pre-translation (``pretranslate``, never paying twice through ``cache``) and the
translator's post-edit round trip (``workbook`` out, ``postedit`` back in, checked by the template validation before
anything is written); ``twin_templates`` keeps the unedited drafts as the machine-translated twin."""
