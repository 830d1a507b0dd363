"""Which lines make the code block around an anchor line, judged by indentation (sans-IO).

This is read_file's ``indentation`` mode as Codex defines it: from the anchor, grow the
block up and down one line at a time while lines are indented at least ``min_indent``
(the anchor's indent minus ``max_levels`` levels; 0 levels means no floor). Lines at the
floor are the block's edges: one is taken upward (more only when they are comments and
``include_header`` holds) and one downward, unless ``include_siblings`` lets the block run
on into neighbouring blocks. Blank lines count as indented like the line before them, and
blank lines at either end of the result are dropped.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Sequence

TAB_WIDTH = 4
COMMENT_PREFIXES = ("#", "//", "--")


@dataclass(frozen=True, slots=True)
class LineInfo:
    number: int  # 1-based line number in the file
    display: str  # the text shown after ``L<n>: ``
    indent: int  # effective indent: a blank line takes the indent of the line before it
    blank: bool
    comment: bool


def measure_indent(text: str) -> int:
    width = 0
    for char in text:
        if char == " ":
            width += 1
        elif char == "\t":
            width += TAB_WIDTH
        else:
            break
    return width


def is_comment(text: str) -> bool:
    return text.strip().startswith(COMMENT_PREFIXES)


def block_range(
    lines: Sequence[LineInfo],
    anchor: int,
    final_limit: int,
    max_levels: int,
    include_siblings: bool,
    include_header: bool,
) -> range:
    """Indices into ``lines`` (contiguous) of the block around ``lines[anchor]``.

    ``lines`` must reach ``final_limit - 1`` lines past the anchor on each side where the
    file has them; the walk never looks further.
    """
    if final_limit <= 1:
        return range(anchor, anchor + 1)
    floor = 0 if max_levels == 0 else max(lines[anchor].indent - max_levels * TAB_WIDTH, 0)
    taken: deque[int] = deque([anchor])
    up, down = anchor - 1, anchor + 1
    up_edges = down_edges = 0
    while len(taken) < final_limit:
        progressed = 0
        if up >= 0:
            if lines[up].indent >= floor:
                index = up
                taken.appendleft(index)
                progressed += 1
                up -= 1
                if lines[index].indent == floor and not include_siblings:
                    header_comment = include_header and lines[index].comment
                    if header_comment or up_edges == 0:
                        up_edges += 1
                    else:
                        taken.popleft()
                        progressed -= 1
                        up = -1
                if len(taken) >= final_limit:
                    break
            else:
                up = -1
        if down < len(lines):
            if lines[down].indent >= floor:
                index = down
                taken.append(index)
                progressed += 1
                down += 1
                if lines[index].indent == floor and not include_siblings:
                    if down_edges > 0:
                        taken.pop()
                        progressed -= 1
                        down = len(lines)
                    down_edges += 1
            else:
                down = len(lines)
        if progressed == 0:
            break
    while taken and lines[taken[0]].blank:
        taken.popleft()
    while taken and lines[taken[-1]].blank:
        taken.pop()
    if not taken:
        return range(anchor, anchor)
    return range(taken[0], taken[-1] + 1)
