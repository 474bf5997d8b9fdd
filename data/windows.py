"""Overlapping windows over a sequence longer than the model's input, and the rule that picks,
for each piece, the window that sees it best (the original run_squad's "max context" rule).

SQuAD (`data.squad.features`) and NER (`data.ner.features`) cut long inputs the same way, so a
piece's prediction always comes from the window where it has the most context on both sides.
The exports cut the same windows in the graph with the twins in `serving.exports.windows`
(`sliding_windows_graph`, `max_context_windows_graph`, `half_window_stride_graph`).
"""


def half_window_stride(window):
    """Half the window, at least 1: consecutive windows then share half their pieces.

    The stride of a classifier's windows when --doc_stride is not given, and the one a run
    takes (or a warning suggests) when the task's default would leave windows no overlap.
    Graph twin: `serving.exports.windows.half_window_stride_graph`.

    Args:
        window: pieces per window.
    """
    return max(window // 2, 1)


def sliding_windows(num_tokens, max_tokens, stride):
    """Returns the (start, length) windows that cover `num_tokens` pieces.

    The first window starts at 0; each next one starts `min(length, stride)` pieces later; the
    last one ends at the last piece. At most `max_tokens` pieces per window. Graph twin:
    `serving.exports.windows.sliding_windows_graph`.

    Args:
        num_tokens: length of the sequence.
        max_tokens: window length.
        stride: pieces between the starts of consecutive windows.

    Returns:
        list of (start, length) tuples; empty for an empty sequence.
    """
    windows = []
    start = 0
    while start < num_tokens:
        length = min(num_tokens - start, max_tokens)
        windows.append((start, length))
        if start + length == num_tokens:
            break
        start += min(length, stride)
    return windows


def max_context_windows(windows, num_tokens):
    """Returns, for each piece, the index of the window that gives it its best context.

    A piece can sit in several windows; the score is the smaller of its left and right
    context, plus 0.01 per window length to prefer longer windows. The first best wins. Graph
    twin: `serving.exports.windows.max_context_windows_graph`.

    Args:
        windows: (start, length) tuples, as `sliding_windows` returns them.
        num_tokens: length of the sequence.

    Returns:
        list of `num_tokens` window indices (None for a piece no window covers).
    """
    best_scores = [None] * num_tokens
    best_windows = [None] * num_tokens
    for index, (start, length) in enumerate(windows):
        end = start + length - 1
        for position in range(start, end + 1):
            score = min(position - start, end - position) + 0.01 * length
            if best_scores[position] is None or score > best_scores[position]:
                best_scores[position], best_windows[position] = score, index
    return best_windows
