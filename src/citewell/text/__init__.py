"""Text analysis shared by retrieval, generation, the cite stage and ingestion.

One place for how citewell reads text, so that a question is read the same way when
passages are ranked, when sentences are chosen and when citations are checked:

- :mod:`~citewell.text.terms`: tokens, stop words, Porter stems, finance expansions and
  question concepts;
- :mod:`~citewell.text.sentences`: sentence spans (syntok) and word counts;
- :mod:`~citewell.text.numbers`: years, values and the reporting periods of column headers;
- :mod:`~citewell.text.tables`: table rows and column headers.
"""
