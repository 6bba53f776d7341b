"""Spider 1.0 scoring (and the variants scored as it is): execution match (`evaluate`), the
official `--plug_value` candidates (`values`) and exact match (`exact`, `exact_eval`)."""
