"""Cutting inputs and histories down to the model's window (sans-IO)."""

from __future__ import annotations

from echsd.threads.history import user_message
from echsd.threads.oversize import fit_items, input_refusal, input_tokens, tokens_of


def output(call_id: str, text: str) -> dict:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def test_the_largest_texts_lose_their_middle_until_the_history_fits() -> None:
    big, small = "a" * 40_000 + "TAIL", "b" * 4_000
    items = [user_message("HEAD" + big), {"type": "reasoning", "encrypted_content": "x" * 2_000}, output("c1", small), output("c2", "c" * 20_000)]
    assert fit_items(items, 100_000) is None  # it fits: nothing to do
    fitted, cut = fit_items(items, 3_000)
    assert cut == 2 and sum(tokens_of(item) for item in fitted) <= 3_000
    text = fitted[0]["content"][0]["text"]
    assert text.startswith("HEADaaa") and text.endswith("aaaTAIL") and "characters cut from the middle here" in text
    assert fitted[1] == items[1] and fitted[2] == items[2]  # reasoning is never cut; the small one was not needed
    assert fitted[3]["call_id"] == "c2" and len(fitted[3]["output"]) < 20_000  # a call keeps its output, shorter
    roomier, cut = fit_items(items, 12_000)
    assert cut == 1 and roomier[1:] == items[1:]  # the largest goes first, and only as far as needed


def test_an_input_is_measured_with_its_attachments_and_refused_past_the_room() -> None:
    size = input_tokens("x" * 4_000, [{"type": "text", "text": "y" * 4_000}, {"type": "image", "image_url": "data:" + "z" * 10**6}])
    assert size == 2_000 + 1_500  # an image counts a flat rate, whatever its encoding's size
    assert input_refusal("m", 10_000, 5_000, 4_000) is None
    message = input_refusal("m", 10_000, 5_000, 6_000)
    assert message is not None and "about 6,000 tokens" in message and "holds 10,000" in message and "at most about 5,000" in message
