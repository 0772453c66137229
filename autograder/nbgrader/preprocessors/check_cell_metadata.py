"""nbgrader's check of the cells' metadata, each distinct metadata checked once per process.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from traitlets import Bool

__all__ = ["CheckCellMetadata"]


class CheckCellMetadata(Preprocessor):
    """nbgrader's ``CheckCellMetadata`` (the cells' nbgrader metadata against nbgrader's schema
    and rules, grade ids unique), each distinct metadata of a cell type checked once per
    process: a class's notebooks share them, and nbgrader's check compiles its JSON schema
    again for every cell. Metadata that fails is never kept, so it fails every time."""

    enabled = Bool(True, help="nbconvert runs a preprocessor only when enabled").tag(config=True)

    def preprocess(
        self, nb: NotebookNode, resources: dict[str, Any]
    ) -> tuple[NotebookNode, dict[str, Any]]:
        import traceback

        from nbgrader.nbgraderformat import ValidationError

        try:
            _kept_metadata_checks()().validate_nb(nb)
        except ValidationError:
            self.log.error(traceback.format_exc())
            message = "Notebook failed to validate; the nbgrader metadata may be corrupted."
            self.log.error(message)
            raise ValidationError(message) from None
        return nb, resources


#: (cell type, the metadata as JSON) of each cell metadata found valid, at most 4096.
_VALID_METADATA: set[tuple[str, str]] = set()


@cache
def _kept_metadata_checks() -> Any:
    """nbgrader's metadata validator, each valid metadata checked once (made on first use)."""
    from nbgrader.nbgraderformat import MetadataValidator

    class KeptMetadataChecks(MetadataValidator):
        def validate_cell(self, cell: NotebookNode) -> None:
            meta = cell.get("metadata", {}).get("nbgrader")
            if meta is None or meta.get("cell_type", cell.cell_type) != cell.cell_type:
                super().validate_cell(cell)  # nbgrader's own (and its cell-type warning)
                return
            key = (str(cell.cell_type), json.dumps(meta, sort_keys=True, default=repr))
            if key not in _VALID_METADATA:
                super().validate_cell(cell)
                if len(_VALID_METADATA) < 4096:
                    _VALID_METADATA.add(key)

    return KeptMetadataChecks
