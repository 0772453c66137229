"""What submission data costs the grader's own process: markdown, many cells, zip archives.

Run from the repository root::

    python -m benchmarks.intake            # about a minute
    python -m benchmarks.intake --quick    # smaller inputs

Prints, side by side:

1. **markdown sanitizing**: seconds for one markdown cell of N nested, unclosed formatting tags
   (``<b><i><em><strong>x</p>``), with the grader's linear pass (:func:`autograder.core.intake.markdown_safety.sanitize_markdown`)
   and with the way it used to be done (nbconvert's mistune rendering, then ``bleach.clean``,
   html5lib underneath), the ratio, and how each grows when N doubles (2: linear, 4: quadratic);
2. **many cells**: seconds for what the grader does with a notebook before and after the sandbox
   (parse, repair against the release, filter outputs, make markdown safe), for the reference
   notebook (the stub), for one at the cell cap, and for 50,000 one-character cells (refused at
   parsing);
3. **a zip bomb**: bytes written to the scratch folder for a 60 MB member packed into a few KB,
   by :func:`autograder.core.intake.collect.collect` and by ``ZipFile.extract`` (the way it used to be done).

Timings are noisy on a shared machine: run it on a quiet one for numbers you report.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import zipfile
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
_TAGS = {
    *("a", "abbr", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5"),
    *("h6", "hr", "i", "img", "li", "ol", "p", "pre", "span", "strong", "sub", "sup", "table"),
    *("tbody", "td", "th", "thead", "tr", "ul", "div"),
}


def _bleach(source: str) -> str:
    """Markdown made safe as it used to be: rendered by mistune, then cleaned by bleach."""
    import bleach
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    return bleach.clean(
        markdown2html_mistune(source),
        tags=_TAGS,
        attributes={"a": ["href", "title"], "img": ["src", "alt", "title", "width", "height"]},
        protocols={"http", "https", "mailto", "attachment"},
        strip=False,
    )


def _seconds(function, *args, repeat: int = 3) -> float:
    """The best of ``repeat`` timings (imports and caches warmed up by the first)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        function(*args)
        best = min(best, time.perf_counter() - start)
    return best


def markdown(sizes: list[int]) -> None:
    from autograder.core.intake.markdown_safety import sanitize_markdown

    print("1. one markdown cell of N x '<b><i><em><strong>x</p>' (seconds)")
    print(f"{'N':>7} {'KB':>6} {'linear pass':>12} {'bleach':>9} {'ratio':>7}")
    previous = None
    for n in sizes:
        source = "<b><i><em><strong>x</p>" * n
        new, old = _seconds(sanitize_markdown, source), _seconds(_bleach, source, repeat=1)
        growth = f"  (x{new / previous[0]:.1f} / x{old / previous[1]:.1f})" if previous else ""
        print(
            f"{n:>7} {len(source) / 1000:>6.0f} {new:>12.3f} {old:>9.2f} {old / new:>7.0f}{growth}"
        )
        previous = (new, old)


def _trusted_steps(nb_bytes: bytes, release) -> str:
    """What the grader's process does with a notebook, the sandbox run left out."""
    from autograder.core.intake.repair import repair_submission
    from autograder.core.intake.student_markdown import safe_markdown
    from autograder.core.intake.student_outputs import keep_submitted_outputs
    from autograder.core.intake.submission_file import UnreadableNotebook, parse_notebook

    try:
        nb = parse_notebook(nb_bytes)
    except UnreadableNotebook as error:
        return f"refused: {str(error)[:60]}"
    repair_submission(nb, release)
    keep_submitted_outputs(nb)
    safe_markdown(nb, release)
    nbformat.writes(nb)
    return f"{len(nb.cells)} cells"


def many_cells(count: int) -> None:
    from autograder.core.intake.submission_file import MAX_CELLS
    from tests.submissions.course import course_submission

    release = nbformat.read(ROOT / "notebooks" / "a2c.ipynb", as_version=4)
    stub = course_submission()
    at_cap = course_submission()
    at_cap.cells += [
        nbformat.v4.new_markdown_cell("x") for _ in range(MAX_CELLS - len(at_cap.cells))
    ]
    many = course_submission()
    many.cells += [nbformat.v4.new_markdown_cell("x") for _ in range(count)]
    print("\n2. the grader's steps outside the sandbox (seconds)")
    _trusted_steps(nbformat.writes(stub).encode(), release)  # imports
    base = None
    for label, nb in (("reference (stub)", stub), ("at the cap", at_cap), (f"+{count}", many)):
        data = nbformat.writes(nb).encode()
        outcome = _trusted_steps(data, release)
        seconds = _seconds(_trusted_steps, data, release)
        base = base or seconds
        print(
            f"{label:>18}: {seconds:7.2f} s  x{seconds / base:5.1f}  {len(data) / 1e6:5.1f} MB  {outcome}"
        )


def zip_bomb() -> None:
    from autograder.core.intake.collect import collect

    with tempfile.TemporaryDirectory() as folder:
        archive = Path(folder) / "bomb.zip"
        with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
            bundle.writestr("zed/a2c.ipynb", b"\0" * (60 * 1024**2))
        for label, unpack in (
            ("collect", lambda scratch: collect([archive], scratch)),
            ("ZipFile.extract", lambda scratch: zipfile.ZipFile(archive).extractall(scratch)),
        ):
            scratch = Path(tempfile.mkdtemp(dir=folder))
            unpack(scratch)
            written = sum(p.stat().st_size for p in scratch.rglob("*") if p.is_file())
            print(
                f"{label:>18}: {written / 1e6:7.1f} MB written for {archive.stat().st_size / 1e3:.0f} KB packed"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller inputs")
    args = parser.parse_args()
    markdown([250, 500, 1000] if args.quick else [500, 1000, 2000, 4000])  # 11 to 92 KB
    many_cells(10_000 if args.quick else 50_000)
    print("\n3. a zip bomb (one 60 MB member)")
    zip_bomb()


if __name__ == "__main__":
    main()
