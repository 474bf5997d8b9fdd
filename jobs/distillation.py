"""The distillation a fine-tuning job runs when run_distill.py calls it with a `Distillation`.

run_classifier's, run_ner's and run_squad's jobs take an optional `distillation`; with one the
job is the same run (the same records, evaluation, prediction and output files) but for four
points, each a method here:

* `task`: the student's task trains on the teacher's outputs (`training.distillation`) and,
  with a hidden-state loss, on its encoder's hidden states (`training.hidden_states`);
* `train_config`: the student's first weights (the teacher's layers, when taken from them)
  and the flags.txt its run records (the runner's flags, as if the runner had run);
* `transfer_examples` / `transfer_sentences`: unlabelled text added to the training examples;
* `teacher_records`: the teacher's logits over the training records, computed once by the
  teacher's own model and stored beside them (`data.records.teacher_outputs`).
"""

import dataclasses
import json
import os

from absl import logging

from data.records.teacher_outputs import (
    TEACHER_OUTPUTS_FILE,
    BesideRecords,
    teacher_feature_spec,
    write_teacher_records,
)
from fileio import reading
from fileio.atomic import write_atomically
from modeling import tf1_checkpoint
from modeling.student_layers import student_arrays
from training.distillation import STUDENTS, TEACHER_LOGITS, TEACHERS, DistillSettings
from training.hidden_states import HiddenStateLoss
from training.loop import Trainer

STUDENT_INIT = os.path.join("student_init", "bert_model.ckpt")
_STAMP_FILE = "teacher_outputs.json"


@dataclasses.dataclass
class Distillation:
    """A student run's teacher and how the student learns from it.

    Attributes:
        settings: `DistillSettings`.
        runner: the teacher's runner, e.g. "run_classifier.py" (its flags.txt header).
        teacher_checkpoint: the teacher's checkpoint prefix.
        teacher_config: the teacher's `BertConfig`.
        student_layers: the teacher layers the student is made of, or None (the student's
            weights come from its --init_checkpoint, or are new).
        transfer_files: unlabelled text files added to the training data.
        transfer_format: "lines" (one example per line) or "task" (the task's file format: a
            classifier's test-file layout, NER's CoNLL).
        distill_flags: names of run_distill's own flags, left out of the student's flags.txt.
    """

    settings: DistillSettings
    runner: str
    teacher_checkpoint: str
    teacher_config: object
    student_layers: tuple | None = None
    transfer_files: tuple = ()
    transfer_format: str = "lines"
    distill_flags: tuple = ()
    _teacher_task: object = dataclasses.field(default=None, repr=False)

    def task(self, task_class, bert_config, *args, **kwargs):
        """The student's task: `task_class`'s, trained on the teacher's outputs (and hidden
        states, with `settings.hidden_weight`); the teacher's task is the same class with the
        same arguments on the teacher's config."""
        self._teacher_task = lambda: TEACHERS[task_class](self.teacher_config, *args, **kwargs)
        hidden = None
        if self.settings.hidden_weight > 0:
            hidden = HiddenStateLoss(
                self.teacher_config,
                self.teacher_checkpoint,
                self.settings.hidden_pairs,
                self.settings.hidden_weight,
            )
        return STUDENTS[task_class](self.settings, bert_config, *args, hidden=hidden, **kwargs)

    def train_config(self, train_config):
        """`train_config` with the student's first weights and the runner's flags.txt.

        With `student_layers`, writes the student's checkpoint (the teacher's weights at those
        layers, `modeling.student_layers`) as `student_init/bert_model.ckpt` in the run's
        output_dir and starts from it (a resumed run starts from its own checkpoint).
        """
        init = train_config.init_checkpoint
        if self.student_layers is not None:
            init = os.path.join(train_config.output_dir, STUDENT_INIT)
            if not reading.is_file(init + ".index"):
                arrays = tf1_checkpoint.read_checkpoint(self.teacher_checkpoint)
                tf1_checkpoint.save_tf1_checkpoint(
                    student_arrays(arrays, self.student_layers), init
                )
                logging.info(
                    "Student of teacher layers %s written to %s",
                    ",".join(map(str, self.student_layers)),
                    init,
                )
        flags_text = _runner_flags(train_config.run_flags, self.runner, self.distill_flags, init)
        return dataclasses.replace(train_config, init_checkpoint=init, run_flags=flags_text)

    def transfer_texts(self):
        """The transfer files' examples as text lines, in order (blank lines left out)."""
        texts = []
        for path in self.transfer_files:
            with reading.open_for_reading(path) as f:
                texts.extend(line.rstrip("\r\n") for line in f if line.strip())
        return texts

    def transfer_examples(self, labels, multi_label, is_regression, processor):
        """run_classifier's transfer examples: one per line, a tab between a pair's texts, or
        ("task") each file read as the task's test file by `processor`; their label is a
        stand-in (no gold label: their `gold` is 0).

        Raises:
            ValueError: "task" for a processor that reads no unlabelled file.
        """
        from data.glue.processor_base import InputExample

        label = 0.0 if is_regression else ([] if multi_label else labels[0])
        examples = []
        if self.transfer_format == "task":
            for path in self.transfer_files:
                try:
                    read = processor.get_unlabelled_examples(path)
                except NotImplementedError:
                    raise ValueError(
                        f"--transfer_format=task: the teacher's task ({processor.name}) reads "
                        "no unlabelled file of its own; pass --transfer_format=lines (one "
                        "example per line, a tab between a pair's texts)."
                    ) from None
                examples.extend(
                    InputExample(f"transfer-{len(examples) + i}", e.text_a, e.text_b, label)
                    for i, e in enumerate(read)
                )
            return examples
        for index, line in enumerate(self.transfer_texts()):
            text_a, _, text_b = line.partition("\t")
            examples.append(InputExample(f"transfer-{index}", text_a, text_b or None, label))
        return examples

    def transfer_sentences(self, labels, first_document):
        """run_ner's transfer sentences (one per line, words split at spaces; or CoNLL files
        with "task"), each tagged with a stand-in tag (no gold label: their `gold` is 0) and
        in documents numbered from `first_document` on."""
        from data.ner.conll import Sentence, Word, read_conll

        tag = "O" if "O" in labels else labels[0]
        sentences = []
        if self.transfer_format == "task":
            for path in self.transfer_files:
                for sentence in read_conll(path, tags="optional").sentences:
                    words = [Word(w.text, tag, w.line) for w in sentence.words]
                    sentences.append(Sentence(words, first_document + sentence.document))
                first_document = sentences[-1].document + 1 if sentences else first_document
            return sentences
        for index, line in enumerate(self.transfer_texts()):
            words = [Word(text, tag, index) for text in line.split()]
            sentences.append(Sentence(words, first_document + index))
        return sentences

    def teacher_records(self, output_dir, strategy, train_config, reader, gold, max_seq_length):
        """The teacher's outputs over the training records, stored beside them.

        Computed by the teacher's model (its checkpoint loaded strictly) unless the file is
        there already for this teacher and these records (a resumed run).

        Args:
            output_dir: this worker's output folder (the training records' own).
            strategy: the run's `tf.distribute.Strategy`.
            train_config: the student's `TrainConfig` (precision, XLA, batch layout).
            reader: `batching -> tf.data.Dataset`: the training records once, in order.
            gold: per training record, 1 if its example has a gold label, else 0.
            max_seq_length: the records' length.

        Returns:
            `BesideRecords` of `teacher_outputs.tf_record` for the training reader.
        """
        task = self._teacher_task()
        shape = task.stored_shape(max_seq_length)
        path = os.path.join(output_dir, TEACHER_OUTPUTS_FILE)
        stamp = json.dumps(
            {
                "teacher_checkpoint": self.teacher_checkpoint,
                "records": len(gold),
                "gold": int(sum(gold)),
                "logits_shape": list(shape),
            },
            sort_keys=True,
        )
        stamp_path = os.path.join(output_dir, _STAMP_FILE)
        beside = BesideRecords(path, teacher_feature_spec(shape))
        if reading.is_file(path) and reading.is_file(stamp_path):
            with reading.open_for_reading(stamp_path) as f:
                if f.read().strip() == stamp:
                    logging.info("Teacher outputs read from %s", path)
                    return beside
        config = dataclasses.replace(
            train_config,
            output_dir=os.path.join(output_dir, "teacher"),
            init_checkpoint=None,
            run_flags="",
            num_train_steps=None,
            num_warmup_steps=None,
        )
        logging.info("***** Teacher outputs: %d records of %s *****", len(gold), path)
        teacher = Trainer(task, strategy, config)
        arrays = tf1_checkpoint.read_checkpoint(self.teacher_checkpoint)
        tf1_checkpoint.assign_arrays(task.variable_map(), arrays, self.teacher_checkpoint)
        rows = (row[TEACHER_LOGITS] for row in teacher.predict_rows(reader, len(gold)))
        write_teacher_records(path, rows, gold, shape)
        write_atomically(stamp_path, stamp + "\n")
        return beside


def _runner_flags(text, runner, distill_flags, init_checkpoint):
    """The flags.txt of a student run: run_distill's flags as the teacher's runner would write
    them (its header, without run_distill's own flags, the student's --init_checkpoint)."""
    if not text:
        return text
    lines = [f"# {runner}: repeat with --flagfile=<this file>"]
    dropped = set(distill_flags) | {"init_checkpoint"}
    for line in text.splitlines()[1:]:
        name = line[2:].partition("=")[0]
        if name in dropped or (name.startswith("no") and name[2:] in dropped):
            continue
        lines.append(line)
    if init_checkpoint:
        lines.append(f"--init_checkpoint={init_checkpoint}")
    return "\n".join(lines) + "\n"
