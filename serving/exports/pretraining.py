"""The pre-trained model as a SavedModel: ids in, masked-LM and next-sentence logits out.

`serving_default` takes run_pretraining's record features as int32 `[B, S]` `input_ids`,
`input_mask`, `segment_ids` and `[B, P]` `masked_lm_positions`, and returns
`masked_lm_logits` float32 `[B, P, V]` and `next_sentence_logits` `[B, 2]` (the original's
`cls/predictions` and `cls/seq_relationship` outputs, before any softmax).
"""

import tensorflow as tf

_INPUTS = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")


class PretrainingExport(tf.Module):
    """A `BertPretrainer` (weights loaded) with its serving signature.

    Args:
        pretrainer: the `BertPretrainer`.
        vocab_file: its vocabulary (stored as an asset, for whoever maps the ids).
        do_lower_case: its casing (a bool variable, as in TF Hub encoders).
    """

    def __init__(self, pretrainer, vocab_file, do_lower_case):
        super().__init__(name="pretraining")
        self.pretrainer = pretrainer
        self.vocab_file = tf.saved_model.Asset(vocab_file)
        self.do_lower_case = tf.Variable(bool(do_lower_case), trainable=False)

    def signatures(self):
        """`{"serving_default": ...}`."""
        specs = [tf.TensorSpec([None, None], tf.int32, name=name) for name in _INPUTS]

        @tf.function(input_signature=specs)
        def serve(input_ids, input_mask, segment_ids, masked_lm_positions):
            inputs = {
                "input_ids": input_ids,
                "input_mask": input_mask,
                "segment_ids": segment_ids,
                "masked_lm_positions": masked_lm_positions,
            }
            out = self.pretrainer(inputs, training=False)
            shape = tf.concat([tf.shape(masked_lm_positions), [-1]], 0)
            return {
                "masked_lm_logits": tf.reshape(out["masked_lm_logits"], shape),
                "next_sentence_logits": out["next_sentence_logits"],
            }

        self.serve = serve
        return {"serving_default": serve}
