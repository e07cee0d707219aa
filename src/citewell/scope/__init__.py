"""The scope check: whether the sources in scope can hold an answer at all.

- :mod:`~citewell.scope.labelindex`: the labels of the scope's resources (title, file
  name, tickers, company names) indexed, and company name ↔ ticker links from the data;
- :mod:`~citewell.scope.periods`: the years the sources report on;
- :mod:`~citewell.scope.check`: the facts a check reads from the store
  (:func:`~citewell.scope.check.gather`, of the question analysis of
  :mod:`citewell.question`) and the check itself, a pure function
  (:func:`~citewell.scope.check.check_scope`).
"""
