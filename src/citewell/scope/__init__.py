"""The scope check: whether the sources in scope can hold an answer at all.

- :mod:`~citewell.scope.names`: the names a question asks about, how a text mentions
  them, and company name ↔ ticker links from the data;
- :mod:`~citewell.scope.periods`: the years a question asks about and the years the
  sources report on;
- :mod:`~citewell.scope.check`: the facts a check reads from the store
  (:func:`~citewell.scope.check.gather`) and the check itself, a pure function
  (:func:`~citewell.scope.check.check_scope`).
"""
