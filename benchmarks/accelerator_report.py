"""The accelerator check's report: per-GPU figures of each row, and the one results table."""

GOAL_SEQ_PER_S, NVIDIA_A100_SEQ_PER_S = 1850, 486


def finish_row(row, peak_tflops):
    """Adds the per-GPU figures and MFU to a measured row."""
    if row["status"] != "ok":
        return
    row["seq_per_s"] = row["examples_per_s"]
    row["seq_per_s_per_gpu"] = row["examples_per_s_per_replica"]
    row["tflops_per_gpu"] = row["tflops_per_replica"]
    row["mfu"] = row["tflops_per_gpu"] / peak_tflops
    peak = row.get("peak_memory_bytes")
    row["peak_memory_gib"] = None if peak is None else peak / 2**30


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def table(rows, args):
    """The results as one Markdown table, with its notes."""
    head = "| model | phase | seq | precision | XLA | peer | batch/GPU | seq/s/GPU | TFLOP/s/GPU"
    head += " | MFU | ours/MG | peak GiB | 1st call s | status |"
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    measured = {
        (r["config"], r["phase"], r["precision"], r["xla"], r["peer"]): r
        for r in rows
        if r["status"] == "ok"
    }
    for r in rows:
        ok = r["status"] == "ok"
        ratio = None
        peer = measured.get((r["config"], r["phase"], r["precision"], r["xla"], "model_garden"))
        if ok and r["peer"] == "ours" and peer:
            ratio = r["seq_per_s_per_gpu"] / peer["seq_per_s_per_gpu"]
        status = r["status"] + (f", {r['note']}" if r.get("note") else "")
        if r["status"] == "error":
            status = "error: " + r.get("error", "")[:80]
        cells = [
            r["config"],
            r["phase"],
            r["seq"],
            r["precision"],
            "yes" if r["xla"] else "no",
            r["peer"],
            r["batch"],
            fmt(r.get("seq_per_s_per_gpu") if ok else None, ",.1f"),
            fmt(r.get("tflops_per_gpu") if ok else None, ".1f"),
            fmt(r.get("mfu") if ok else None, ".1%"),
            fmt(ratio, ".2f"),
            fmt(r.get("peak_memory_gib") if ok else None, ".1f"),
            fmt(r.get("first_call_s") if ok else None, ".0f"),
            status,
        ]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    lines.append("")
    lines.append(
        f"MFU: model TFLOP/s per GPU over {args.peak_tflops:g} TFLOP/s (--peak_tflops, the dense "
        "bf16 peak) for every precision, so float32 rows are against the bf16 peak too; float32 "
        "is TensorFlow's default (TensorFloat-32 matmuls on Ampere and later)."
    )
    lines.append(
        f"Anchors, BERT-large phase 1: NVIDIA's TF2 BERT on an A100 about "
        f"{NVIDIA_A100_SEQ_PER_S} seq/s per GPU; this project's goal on an H200 "
        f"{GOAL_SEQ_PER_S:,} seq/s per GPU (45% MFU)."
    )
    headline = measured.get(("large", 1, "mixed_bfloat16", True, "ours"))
    if headline:
        verdict = "met" if headline["seq_per_s_per_gpu"] >= GOAL_SEQ_PER_S else "not met"
        lines.append(
            f"Headline: {headline['seq_per_s_per_gpu']:,.0f} seq/s per GPU on "
            f"{headline.get('device', '?')}, goal {verdict}."
        )
    if args.dry_run:
        lines.append("Dry run: CPU, tiny model; the figures only show that every path runs.")
    return "\n".join(lines)
