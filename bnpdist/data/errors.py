"""The one exception raised for bad corpus input."""
from __future__ import annotations


class CorpusError(ValueError):
    """Bad input, located by file, row group, column and row.

    ``str(err)`` reads like
    ``corpus/part-1.parquet: row group 3: column 'counts': negative count -2 at row 17``;
    parts that do not apply (``None``) are left out. ``row`` counts from 0 within the row group.
    The error pickles with its attributes, so it survives the trip back from a Dask worker.
    """

    def __init__(self, message: str, file: str, row_group: int | None = None,
                 column: str | None = None, row: int | None = None):
        self.message = message
        self.file = str(file)
        self.row_group = None if row_group is None else int(row_group)
        self.column = column
        self.row = None if row is None else int(row)
        parts = [self.file]
        if self.row_group is not None:
            parts.append(f"row group {self.row_group}")
        if column is not None:
            parts.append(f"column '{column}'")
        parts.append(message if self.row is None else f"{message} at row {self.row}")
        super().__init__(": ".join(parts))

    def __reduce__(self):
        return (type(self), (self.message, self.file, self.row_group, self.column, self.row))
