"""Tasks: a model plus its loss and outputs, in the form the shared loop consumes.

Every task is a `Task` (the interface the Trainer reads, with its defaults): the pre-training,
classifier, SQuAD and NER tasks below.

A task's loss is a sum of terms `sum(numerator_t) / (sum(weight_t) + epsilon_t)` where the
weights depend only on the input features (the masked-LM weights, the batch size). The loop
sums the weights over all replicas and accumulation micro-batches before it differentiates, so
a distributed or accumulated step computes exactly the loss of the whole global batch.
"""

import tensorflow as tf

from modeling import tf1_checkpoint
from modeling.task_models import (
    BertClassifier,
    BertPretrainer,
    BertSpanModel,
    BertTokenClassifier,
)


class Task:
    """What the shared loop needs of a job; subclasses fill in the model, loss and outputs.

    Attributes:
        loss_epsilons: per loss term, added to its summed weights.
        cuts_to_length: batches may be cut to their longest sequence: the loss and outputs
            read no padding position (`training.batch_plan`).
        real_tokens_only: training may run the encoder's token-wise parts on the real tokens
            only (`modeling.transformer.RealTokens`); only where `cuts_to_length`.
        per_token_features: features besides the inputs with one value per token, cut with
            them (`data.records.batching.Batching.per_token_features`).
        freezes_pooler: the head reads the sequence output only, so the pooler gets no
            gradient; the original's optimizer then leaves it as loaded (no update, no weight
            decay), and so does this one.
        metric_names: the metrics `metric_sums` gives, for `Trainer.evaluate`.

    Args:
        config: a `BertConfig`.
    """

    loss_epsilons = (0.0,)
    cuts_to_length = False
    real_tokens_only = False
    per_token_features = ()
    freezes_pooler = False
    metric_names = ()

    def __init__(self, config):
        self.config = config
        self.model = None

    def build_model(self, gradient_checkpointing=False):
        """Creates the Keras model (call inside the strategy scope); `gradient_checkpointing`:
        training recomputes the encoder layers (`modeling.bert_model.Encoder`)."""
        self.model = self.make_model()
        self.model.bert.gradient_checkpointing = gradient_checkpointing
        if self.freezes_pooler:
            self.model.bert.pooler.trainable = False
        return self.model

    def make_model(self):
        """The task's Keras model, its encoder as `.bert`."""
        raise NotImplementedError

    def variable_map(self):
        """Original checkpoint name -> variable, for loading, saving and `model.ckpt-N`."""
        raise NotImplementedError

    def loss_weights(self, features):
        """Per-term weights of the batch, from its features alone (no model call)."""
        raise NotImplementedError

    def trainable_variables(self):
        """What the optimizer trains: the model's trainable variables (a task with weights of
        its own outside the model adds them)."""
        return self.model.trainable_variables

    def forward(self, features, training):
        """Runs the model; a dict of tensors ("aux") for the loss, metrics and outputs."""
        return self.aux_of(self.model(features, training=training), features)

    def aux_of(self, outputs, features):
        """The aux of the model's `outputs` on the batch `features`."""
        raise NotImplementedError

    def loss_numerators(self, aux):
        """Per-term sums of the batch's losses."""
        raise NotImplementedError

    def metric_sums(self, aux):
        """Metric name -> (weighted sum, weight) of the batch, for `metric_names`."""
        return {}

    def prediction_outputs(self, aux):
        """Per-example outputs `Trainer.predict` keeps."""
        raise NotImplementedError


class PretrainingTask(Task):
    """Masked LM + next-sentence prediction, as run_pretraining.py.

    Args:
        config: a `BertConfig`.
    """

    # The masked-LM loss divides by sum(weights) + 1e-5; the NSP loss is a plain mean.
    loss_epsilons = (1e-5, 0.0)
    # Masked positions are real tokens and the NSP head reads [CLS]: padding changes nothing.
    cuts_to_length = True
    # The sequences fill max_seq_length but for short_seq_prob of them: packing their tokens
    # would save little and cost its gathers (about 3% of a BERT-Mini step at full length).
    real_tokens_only = False
    metric_names = (
        "masked_lm_accuracy",
        "masked_lm_loss",
        "next_sentence_accuracy",
        "next_sentence_loss",
    )

    def make_model(self):
        return BertPretrainer(self.config)

    def variable_map(self):
        """Original checkpoint name -> variable, encoder and heads."""
        return tf1_checkpoint.build_variable_map(
            bert_model=self.model.bert, pretraining_heads=self.model.cls
        )

    def loss_weights(self, features):
        """Per-term weights of the batch (no model call): [sum(masked_lm_weights), batch]."""
        weights = tf.cast(features["masked_lm_weights"], tf.float32)
        batch = tf.cast(tf.shape(features["input_ids"])[0], tf.float32)
        return [tf.reduce_sum(weights), batch]

    def aux_of(self, out, features):
        """Per-prediction and per-example losses and logits."""
        mlm_logits = out["masked_lm_logits"]
        mlm_ids = tf.reshape(features["masked_lm_ids"], [-1])
        mlm_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(mlm_ids, mlm_logits)
        nsp_labels = tf.reshape(features["next_sentence_labels"], [-1])
        nsp_logits = out["next_sentence_logits"]
        nsp_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(nsp_labels, nsp_logits)
        return {
            "mlm_loss": mlm_loss,
            "mlm_logits": mlm_logits,
            "mlm_ids": mlm_ids,
            "mlm_weights": tf.reshape(tf.cast(features["masked_lm_weights"], tf.float32), [-1]),
            "nsp_loss": nsp_loss,
            "nsp_logits": nsp_logits,
            "nsp_labels": nsp_labels,
        }

    def loss_numerators(self, aux):
        """[sum(w * mlm_loss), sum(nsp_loss)] of a (micro-)batch."""
        return [tf.reduce_sum(aux["mlm_weights"] * aux["mlm_loss"]), tf.reduce_sum(aux["nsp_loss"])]

    def metric_sums(self, aux):
        """name -> (weighted sum, weight) for this batch; eval metrics are ratios of totals."""
        w = aux["mlm_weights"]
        mlm_correct = tf.cast(
            tf.equal(tf.argmax(aux["mlm_logits"], -1, tf.int32), aux["mlm_ids"]), tf.float32
        )
        nsp_correct = tf.cast(
            tf.equal(tf.argmax(aux["nsp_logits"], -1, tf.int32), aux["nsp_labels"]), tf.float32
        )
        count = tf.cast(tf.size(aux["nsp_loss"]), tf.float32)
        return {
            "masked_lm_accuracy": (tf.reduce_sum(w * mlm_correct), tf.reduce_sum(w)),
            "masked_lm_loss": (tf.reduce_sum(w * aux["mlm_loss"]), tf.reduce_sum(w)),
            "next_sentence_accuracy": (tf.reduce_sum(nsp_correct), count),
            "next_sentence_loss": (tf.reduce_sum(aux["nsp_loss"]), count),
        }


class ClassifierTask(Task):
    """Sentence (pair) classification, multi-label classification, or regression, as
    run_classifier.py.

    Classification: softmax cross-entropy, mean over the batch. Multi-label: a sigmoid per label
    and binary cross-entropy, averaged over the labels of an example, then over the batch.
    Regression (STS-B): mean squared error of the single output. Padding examples
    (`is_real_example == 0`) count for nothing.

    Class weights (`--class_weights`) scale each example's loss by its class's weight and the
    batch's loss stays the mean over its examples (as Keras' `class_weight`); for multi-label
    they are each label's positive weight (`tf.nn.weighted_cross_entropy_with_logits`).

    Args:
        config: a `BertConfig`.
        num_labels: number of classes (ignored for regression).
        is_regression: one float output and a squared-error loss.
        dropout_rate: the head's dropout while training (`--classifier_dropout_prob`).
        multi_label: a sigmoid per label; `label_ids` are multi-hot `[B, num_labels]`.
        class_weights: None, or float `[num_labels]`: per class (single-label) or per label's
            positive examples (multi-label).
    """

    # The head reads [CLS] only: batches can be cut to their longest sequence, and the
    # padding inside them skipped.
    cuts_to_length = True
    real_tokens_only = True

    def __init__(
        self,
        config,
        num_labels,
        is_regression=False,
        dropout_rate=0.1,
        multi_label=False,
        class_weights=None,
    ):
        super().__init__(config)
        self.is_regression = is_regression
        self.multi_label = multi_label and not is_regression
        self.num_labels = 1 if is_regression else num_labels
        self.dropout_rate = dropout_rate
        self.class_weights = None
        if class_weights is not None and not is_regression:
            self.class_weights = tf.constant(class_weights, tf.float32)

    def make_model(self):
        return BertClassifier(self.config, self.num_labels, self.dropout_rate)

    def variable_map(self):
        return tf1_checkpoint.build_variable_map(
            bert_model=self.model.bert, classifier=self.model.classifier
        )

    def _real(self, features):
        real = features.get("is_real_example")
        if real is None:
            return tf.ones([tf.shape(features["input_ids"])[0]], tf.float32)
        return tf.reshape(tf.cast(real, tf.float32), [-1])

    def loss_weights(self, features):
        return [tf.reduce_sum(self._real(features))]

    def aux_of(self, logits, features):
        if self.multi_label:
            labels = tf.reshape(features["label_ids"], [-1, self.num_labels])
            targets = tf.cast(labels, logits.dtype)
            if self.class_weights is None:
                per_label = tf.nn.sigmoid_cross_entropy_with_logits(targets, logits)
            else:
                per_label = tf.nn.weighted_cross_entropy_with_logits(
                    targets, logits, tf.cast(self.class_weights, logits.dtype)
                )
            return {
                "logits": logits,
                "predictions": tf.sigmoid(logits),
                "per_example_loss": tf.reduce_mean(per_label, axis=-1),
                "labels": labels,
                "real": self._real(features),
            }
        labels = tf.reshape(features["label_ids"], [-1])
        if self.is_regression:
            predictions = logits[:, 0]
            per_example = tf.square(predictions - tf.cast(labels, tf.float32))
        else:
            predictions = tf.nn.softmax(logits, axis=-1)
            per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(
                tf.cast(labels, tf.int32), logits
            )
            if self.class_weights is not None:
                weights = tf.gather(self.class_weights, tf.cast(labels, tf.int32))
                per_example = per_example * tf.cast(weights, per_example.dtype)
        return {
            "logits": logits,
            "predictions": predictions,
            "per_example_loss": per_example,
            "labels": labels,
            "real": self._real(features),
        }

    def loss_numerators(self, aux):
        return [tf.reduce_sum(aux["per_example_loss"] * aux["real"])]

    def prediction_outputs(self, aux):
        """Per-example outputs `Trainer.predict` keeps: what evaluation and test files need, and
        the logits that windows of one example are aggregated from."""
        keys = ("logits", "predictions", "per_example_loss", "labels", "real")
        return {k: aux[k] for k in keys}


class SquadTask(Task):
    """Answer-span prediction, as run_squad.py.

    The loss is the mean over the batch of the start position's cross-entropy (softmax over all
    S positions, none masked) plus the same for the end position, halved: two terms
    `sum(ce) / (2 B)`.

    Args:
        config: a `BertConfig`.
    """

    loss_epsilons = (0.0, 0.0)
    # The original's softmax over start (end) positions and its n-best search read every
    # position's logit, padding included: cutting the padding would change both.
    cuts_to_length = False
    freezes_pooler = True

    def make_model(self):
        return BertSpanModel(self.config)

    def variable_map(self):
        return tf1_checkpoint.build_variable_map(bert_model=self.model.bert, span=self.model.span)

    def loss_weights(self, features):
        twice_batch = 2.0 * tf.cast(tf.shape(features["input_ids"])[0], tf.float32)
        return [twice_batch, twice_batch]

    def aux_of(self, outputs, features):
        start_logits, end_logits = outputs
        aux = {"start_logits": start_logits, "end_logits": end_logits}
        if "unique_ids" in features:
            aux["unique_ids"] = tf.reshape(features["unique_ids"], [-1])
        if "start_positions" in features:
            for side, logits in (("start", start_logits), ("end", end_logits)):
                positions = tf.cast(tf.reshape(features[f"{side}_positions"], [-1]), tf.int32)
                aux[f"{side}_positions"] = positions
                aux[f"{side}_loss"] = tf.nn.sparse_softmax_cross_entropy_with_logits(
                    positions, logits
                )
        return aux

    def loss_numerators(self, aux):
        return [tf.reduce_sum(aux["start_loss"]), tf.reduce_sum(aux["end_loss"])]

    def prediction_outputs(self, aux):
        """Per-feature outputs `Trainer.predict` keeps: what the prediction files need."""
        return {k: aux[k] for k in ("unique_ids", "start_logits", "end_logits")}


class NerTask(Task):
    """A tag per word (named-entity recognition), as run_ner.py.

    The loss is the mean cross-entropy over the labelled positions of the batch (the first piece
    of each word the window predicts; `label_ids` -1 elsewhere): one term
    `sum(ce) / count(labelled)`.

    Args:
        config: a `BertConfig`.
        num_labels: tags C.
        dropout_rate: the head's dropout while training (`--classifier_dropout_prob`).
    """

    # Only labelled positions (first pieces of real words) count: padding changes nothing.
    cuts_to_length = True
    real_tokens_only = True
    per_token_features = ("label_ids",)
    freezes_pooler = True

    def __init__(self, config, num_labels, dropout_rate=0.1):
        super().__init__(config)
        self.num_labels = num_labels
        self.dropout_rate = dropout_rate

    def make_model(self):
        return BertTokenClassifier(self.config, self.num_labels, self.dropout_rate)

    def variable_map(self):
        return tf1_checkpoint.build_variable_map(
            bert_model=self.model.bert, token_classifier=self.model.classifier
        )

    def loss_weights(self, features):
        return [tf.reduce_sum(tf.cast(features["label_ids"] >= 0, tf.float32))]

    def aux_of(self, logits, features):
        labels = tf.cast(features["label_ids"], tf.int32)
        labelled = tf.cast(labels >= 0, tf.float32)
        token_loss = labelled * tf.nn.sparse_softmax_cross_entropy_with_logits(
            tf.maximum(labels, 0), logits
        )
        return {
            "logits": logits,
            "predictions": tf.argmax(logits, axis=-1, output_type=tf.int32),
            "token_loss": token_loss,
            "labelled": labelled,
        }

    def loss_numerators(self, aux):
        return [tf.reduce_sum(aux["token_loss"])]

    def prediction_outputs(self, aux):
        """Per-window outputs `Trainer.predict` keeps: the tag ids `[B, S]` and, for the
        evaluation loss, each window's summed loss and labelled count `[B]`."""
        return {
            "predictions": aux["predictions"],
            "loss_sum": tf.reduce_sum(aux["token_loss"], axis=-1),
            "label_count": tf.reduce_sum(aux["labelled"], axis=-1),
        }
