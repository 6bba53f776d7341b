"""Cost of tokens from a price table: USD per million prompt / completion tokens, by model.

The defaults are list prices at the time of writing and only a convenience; pass your own
table (`--prices FILE`, a JSON object `{"model": {"prompt": 2.5, "completion": 10.0}}`) for
anything that must be exact. A model not in the table costs 0 and is reported as unpriced.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from querybench import json_input
from querybench.errors import DataError
from querybench.models.base import Usage


@dataclass(frozen=True)
class Price:
    prompt: float  # USD per 1M prompt tokens
    completion: float  # USD per 1M completion tokens

    def cost(self, usage: Usage) -> float:
        return (usage.prompt_tokens * self.prompt + usage.completion_tokens * self.completion) / 1e6


DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4o": Price(2.5, 10.0),
    "gpt-4o-mini": Price(0.15, 0.6),
    "gpt-4.1": Price(2.0, 8.0),
    "gpt-4.1-mini": Price(0.4, 1.6),
    "o3-mini": Price(1.1, 4.4),
    "oracle": Price(0.0, 0.0),
    "constant": Price(0.0, 0.0),
}


class PriceTable:
    def __init__(self, prices: dict[str, Price] | None = None) -> None:
        self.prices = dict(DEFAULT_PRICES if prices is None else prices)

    def price(self, model: str) -> Price | None:
        return self.prices.get(model)

    def cost(self, model: str, usage: Usage) -> float:
        price = self.prices.get(model)
        return price.cost(usage) if price is not None else 0.0

    @classmethod
    def from_file(cls, path: str | Path, *, with_defaults: bool = True) -> PriceTable:
        try:
            data = json_input.loads(Path(path).read_text(encoding="utf-8"))
            prices = {
                str(name): Price(float(p["prompt"]), float(p["completion"]))
                for name, p in data.items()
            }
        except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
            raise DataError(
                f"{path}: price table must be {{model: {{prompt: USD/1M, completion: USD/1M}}}} "
                f"({exc!r})"
            ) from exc
        return cls({**DEFAULT_PRICES, **prices} if with_defaults else prices)
