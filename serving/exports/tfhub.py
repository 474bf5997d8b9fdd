"""TF Hub-format BERT: the encoder and the preprocessor as Model Garden publishes them.

Both are "reusable SavedModels" (tensorflow.org/hub/reusable_saved_models): a callable root
with `variables`, `trainable_variables` and `regularization_losses`, so `hub.KerasLayer` and
`tf.saved_model.load` use them as they use Model Garden's exports
(official/nlp/tools/export_tfhub_lib.py):

* encoder: `encoder(inputs, training=False)` with `inputs` a dict of int32 `[B, S]`
  `input_word_ids`, `input_mask`, `input_type_ids`; returns `pooled_output` `[B, H]`, `default`
  (the same), `sequence_output` `[B, S, H]` and `encoder_outputs` (one `[B, S, H]` per layer).
  Root attributes `vocab_file` (asset) and `do_lower_case` (bool variable). With the
  pretraining heads, the `mlm` sub-object also takes `masked_lm_positions` int32 `[B, P]` and
  adds `mlm_logits` `[B, P, V]`.
* preprocessor: `preprocessor(sentences)` (string `[B]`) returns the three int32 `[B, 128]`
  inputs (the default `seq_length`); `preprocessor.tokenize(sentences)` returns int32 ids
  `[B, (words), (pieces)]` and has `get_special_tokens_dict()`;
  `preprocessor.bert_pack_inputs([tokens_a, tokens_b], seq_length=S)` packs one or two
  segments as run_classifier does (`[CLS] A [SEP] B [SEP]`, the longer segment trimmed first).
"""

import tensorflow as tf

from data.tokenization.fast_tokenizer import FastFullTokenizer
from data.tokenization.preprocessor import pack_inputs

_HUB_INPUTS = {
    "input_word_ids": "input_ids",
    "input_mask": "input_mask",
    "input_type_ids": "segment_ids",
}


def _encoder_inputs(inputs):
    return {ours: tf.cast(inputs[hub], tf.int32) for hub, ours in _HUB_INPUTS.items()}


def _input_specs(extra=()):
    names = (*_HUB_INPUTS, *extra)
    return {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in names}


def _reusable(root, call, spec, variables, trainable):
    """Gives `root` the reusable-SavedModel API around `call(inputs, training)`."""
    function = tf.function(call)
    for training in (False, True):
        function.get_concrete_function(spec, training=training)
    root.__call__ = function
    root.variables = list(variables)
    root.trainable_variables = list(trainable)
    root.regularization_losses = []


def _weights(layers):
    # `variables`, not `weights`: Keras counts the dropout seed state among a layer's
    # variables only, and the training=True functions capture it.
    return [v for layer in layers for v in layer.variables]


def _trainable(layers):
    return [v for layer in layers for v in layer.trainable_weights]


def build_encoder(bert_model, vocab_file, do_lower_case, pretraining_heads=None):
    """The TF Hub encoder object around a loaded `BertModel`.

    Args:
        bert_model: a `BertModel` (weights loaded).
        vocab_file: its vocabulary (saved as the `vocab_file` asset).
        do_lower_case: its casing (saved as the `do_lower_case` variable).
        pretraining_heads: the loaded `PretrainingHeads`, for the `mlm` sub-object; or None.

    Returns:
        A trackable object for `tf.saved_model.save`.
    """
    root = tf.train.Checkpoint()
    # Tracked so that every variable the functions capture (dropout seed state too) is saved.
    root.encoder = bert_model

    def encode(inputs, training=False):
        out = bert_model(_encoder_inputs(inputs), training=training)
        return {
            "pooled_output": out["pooled_output"],
            "default": out["pooled_output"],
            "sequence_output": out["sequence_output"],
            "encoder_outputs": list(out["all_encoder_layers"]),
        }

    _reusable(root, encode, _input_specs(), _weights([bert_model]), _trainable([bert_model]))
    root.vocab_file = tf.saved_model.Asset(vocab_file)
    root.do_lower_case = tf.Variable(bool(do_lower_case), trainable=False, name="do_lower_case")
    if pretraining_heads is not None:
        mlm = tf.train.Checkpoint()
        mlm.encoder, mlm.heads = bert_model, pretraining_heads

        def encode_and_predict(inputs, training=False):
            out = encode(inputs, training=training)
            positions = tf.cast(inputs["masked_lm_positions"], tf.int32)
            logits = pretraining_heads.predictions(
                out["sequence_output"], positions, bert_model.embedding_table
            )
            shape = tf.concat([tf.shape(positions), [-1]], 0)
            return {**out, "mlm_logits": tf.reshape(logits, shape)}

        parts = [bert_model, pretraining_heads.predictions]
        spec = _input_specs(("masked_lm_positions",))
        _reusable(mlm, encode_and_predict, spec, _weights(parts), _trainable(parts))
        root.mlm = mlm
    return root


def build_preprocessor(vocab_file, do_lower_case, default_seq_length=128):
    """The TF Hub preprocessor object (see the module docstring).

    Args:
        vocab_file: the vocabulary (saved as the `vocab_file` asset).
        do_lower_case: as for `FullTokenizer`.
        default_seq_length: the root call's output length and `bert_pack_inputs`' default.

    Returns:
        A trackable object for `tf.saved_model.save`.
    """
    tokenizer = FastFullTokenizer(vocab_file, do_lower_case=do_lower_case)
    vocab = tokenizer.vocab
    missing = [t for t in ("[CLS]", "[SEP]", "[PAD]", "[MASK]") if t not in vocab]
    if missing:
        raise ValueError(f"Vocabulary {vocab_file} lacks {missing}; the preprocessor needs them.")
    special = {
        "vocab_size": max(vocab.values()) + 1,
        "padding_id": vocab["[PAD]"],
        "start_of_sequence_id": vocab["[CLS]"],
        "end_of_segment_id": vocab["[SEP]"],
        "mask_id": vocab["[MASK]"],
    }
    sentences = tf.TensorSpec([None], tf.string, name="sentences")

    def tokenize_words(texts):
        return tf.cast(tokenizer.tokenize_words(texts), tf.int32)

    def pack(segments, seq_length=default_seq_length):
        if not 1 <= len(segments) <= 2:
            raise ValueError(f"bert_pack_inputs takes 1 or 2 segments, got {len(segments)}.")
        flat = [s.merge_dims(1, -1) if s.ragged_rank > 1 else s for s in segments]
        out = pack_inputs(
            flat[0],
            flat[1] if len(flat) > 1 else None,
            seq_length,
            special["start_of_sequence_id"],
            special["end_of_segment_id"],
        )
        return {
            "input_word_ids": out["input_ids"],
            "input_mask": out["input_mask"],
            "input_type_ids": out["segment_ids"],
        }

    root = tf.train.Checkpoint()
    root.tokenizer = tokenizer
    root.vocab_file = tf.saved_model.Asset(vocab_file)
    root.do_lower_case = tf.Variable(bool(do_lower_case), trainable=False, name="do_lower_case")
    root.__call__ = tf.function(
        lambda texts: pack([tokenize_words(texts)]), input_signature=[sentences]
    )
    root.tokenize = tf.train.Checkpoint()
    root.tokenize.__call__ = tf.function(tokenize_words, input_signature=[sentences])
    root.tokenize.get_special_tokens_dict = tf.train.Checkpoint()
    root.tokenize.get_special_tokens_dict.__call__ = tf.function(
        lambda: {k: tf.constant(v, tf.int32) for k, v in special.items()}, input_signature=[]
    )
    root.bert_pack_inputs = tf.train.Checkpoint()
    root.bert_pack_inputs.__call__ = _pack_function(pack)
    root.variables, root.trainable_variables, root.regularization_losses = [], [], []
    return root


def _pack_function(pack):
    """`bert_pack_inputs` traced for 1-2 segments of ragged rank 1-2, with and without an
    explicit `seq_length` (int32 scalar), as Model Garden's preprocessors are."""
    function = tf.function(pack, autograph=False)
    for ragged_rank in (1, 2):
        for num_segments in (1, 2):
            spec = [
                tf.RaggedTensorSpec([None] * (ragged_rank + 1), tf.int32, ragged_rank)
                for _ in range(num_segments)
            ]
            function.get_concrete_function(spec)
            function.get_concrete_function(spec, seq_length=tf.TensorSpec([], tf.int32))
    return function
