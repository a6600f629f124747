"""``gpudoctor lint``: a static checker for the training-script pitfalls L1-L12 of the seed checklists.

Source files are parsed with the standard library's ``ast``; nothing is imported or run. This package imports
no CLI, probe or confirmation module (tests/test_lint_rules.py checks it): ``cli/lint_cmd.py`` registers the
command, ``hostreport.py`` adds the "Training script" area to ``gpudoctor scan --script``.

- :mod:`.context`: one file's tree, imports, qualified names, arguments, rank guards;
- :mod:`.registry`: joins each check with its metadata row in rules/lint_meta.toml (``gpudoctor explain
  LNT0xx``, docs/rules/lnt.md);
- :mod:`.rules_dist`, :mod:`.rules_train`, :mod:`.rules_amp`: the rules;
- :mod:`.engine`: files, ignores, workers; :mod:`.output`: text, JSON, GitHub, SARIF, fixes.

Entry points: ``gpudoctor.lint.engine.lint_paths`` / ``lint_source``. Sources:
../shared/docs/seed-checklists.md (section L); docs/lint.md.
"""
