"""The pure core: recipes, their encoding through the chat template, the data stream and the loop's
checkpoints (no database)."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from PIL import Image

from finetune.core.encoding import IGNORE, ExampleEncoder, conversation_pieces
from finetune.core.recipes import ChainFacts, RecipeError, StepFacts, VariantFacts, answer_text, build_examples
from finetune.core.trainer import DataStream, TrainConfig, Trainer, TrainingError, lr_at, train

Q1 = "Is there a lesion?\nA. yes\nB. no\nAnswer with the letter of the correct option."
Q2 = "Where is it?\nA. liver\nB. spleen\nC. kidney\nAnswer with the letter of the correct option."


def _chain(cid: int, image: str, *, variants: tuple = ()) -> ChainFacts:
    return ChainFacts(cid, image, (
        StepFacts(cid * 10 + 2, 2, 3, Q2, "single_choice", {"value": "spleen", "letter": "B"}, (4, 5, 20, 30)),
        StepFacts(cid * 10 + 1, 1, 2, Q1, "yes_no", {"value": "yes", "letter": "A"}, (4, 5, 20, 30)),
    ), variants)


@pytest.fixture
def images(tmp_path):
    paths = []
    for i in range(6):
        path = tmp_path / f"im{i}.png"
        Image.fromarray((np.full((40, 48), 30 + 40 * i)).astype("uint8")).save(path)
        paths.append(str(path))
    return paths


def test_recipes_share_items_and_differ_in_context_and_evidence(images):
    hint = VariantFacts(900, 11, "misleading_hint", "A colleague thinks B.\n" + Q1, "yes_no",
                        {"value": "yes", "letter": "A"}, images[0])
    clean = VariantFacts(901, 11, "clean", Q1, "yes_no", {"value": "yes", "letter": "A"}, images[0])
    chains = [_chain(1, images[0], variants=(hint, clean)), _chain(2, images[1])]
    stepwise = build_examples("stepwise", chains)
    assert [e.source for e in stepwise] == ["chain:1", "chain:2"]
    assert stepwise[0].turns == ((Q1, "A\nEvidence: [4, 5, 20, 30]"), (Q2, "B\nEvidence: [4, 5, 20, 30]"))
    answer_only = build_examples("answer_only", chains)
    assert [e.turns for e in answer_only[:2]] == [((Q1, "A"),), ((Q2, "B"),)]
    assert {i for e in answer_only for i in e.items} == {i for e in stepwise for i in e.items}
    mixed = build_examples("mixed", chains)
    assert [e.source for e in mixed] == ["chain:1", "variant:900", "chain:2"]   # the clean twin is not added again
    with pytest.raises(RecipeError, match="unknown recipe"):
        build_examples("cot", chains)
    assert build_examples("stepwise", chains, "text")[0].turns[1] == (Q2, "spleen\nEvidence: [4, 5, 20, 30]")


def test_answers_are_written_as_the_prompt_asks():
    assert answer_text("multi_choice", {"letter": ["A", "C"]}) == "A, C"
    assert answer_text("box", {"value": [1.4, 2, 30.6, 40]}) == "[1, 2, 31, 40]"
    assert answer_text("single_choice", {"letter": "B", "answer_with_box": True, "evidence_box": [1, 2, 3, 4]}) == \
        "B (1, 2, 3, 4)"
    with pytest.raises(RecipeError):
        answer_text("single_choice", {"value": "x"})
    # the text style: the option text(s), which the answer parser scores like the letter
    assert answer_text("single_choice", {"value": "spleen", "letter": "B"}, "text") == "spleen"
    assert answer_text("multi_choice", {"value": ["liver", "kidney"], "letter": ["A", "C"]}, "text") == "liver, kidney"
    assert answer_text("box", {"value": [1, 2, 3, 4]}, "text") == "[1, 2, 3, 4]"
    with pytest.raises(RecipeError, match="unknown answer style"):
        answer_text("yes_no", {"value": "yes", "letter": "A"}, "emoji")


def test_text_answers_are_scored_like_the_letter():
    from workers.parsing import parse_answer

    text = answer_text("single_choice", {"value": "spleen", "letter": "B"}, "text") + "\nEvidence: [4, 5, 20, 30]"
    parsed = parse_answer(text, answer_type="single_choice", options=("liver", "spleen", "kidney"),
                          box_format="auto", image_size=(64, 64))
    assert parsed.outcome == "answered" and parsed.value == "B"


def test_the_first_turn_is_encoded_exactly_as_evaluation_prompts_the_model(tiny_vlm_dir, images):
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(str(tiny_vlm_dir), local_files_only=True)
    example = build_examples("stepwise", [_chain(1, images[0])])[0]
    pieces = conversation_pieces(processor, example)
    assert [s for _, s in pieces] == [False, True, False, True]
    prompt = processor.apply_chat_template([{"role": "user", "content": [{"type": "image"},
                                             {"type": "text", "text": Q1}]}], add_generation_prompt=True,
                                           tokenize=False)
    assert pieces[0][0] == prompt                                    # what the transformers backend sends
    encoded = ExampleEncoder(processor).encode(example)
    with Image.open(images[0]) as im:
        expected = processor(text=[prompt], images=[[im.convert("RGB")]], return_tensors="pt")["input_ids"][0].tolist()
    assert list(encoded.input_ids[: len(expected)]) == expected
    assert set(encoded.labels[: len(expected)]) == {IGNORE}         # no loss on the prompt
    supervised = [t for t in encoded.labels if t != IGNORE]
    text = processor.tokenizer.decode(supervised, skip_special_tokens=True)
    assert "A\nEvidence: [4, 5, 20, 30]" in text and "B\nEvidence" in text
    assert supervised.count(processor.tokenizer.eos_token_id) == 2  # each answer ends the model's turn
    first_turn = encoded.input_ids.index(processor.tokenizer.eos_token_id) + 1
    short = ExampleEncoder(processor, max_length=first_turn + 3).encode(example)
    assert short.tokens == first_turn and short.supervised > 0        # a turn that does not fit is dropped


def test_the_data_stream_is_seeded_and_fills_each_step_with_its_token_budget():
    lengths = [100, 50, 70, 30, 90]
    a, b = DataStream(lengths, seed=3), DataStream(lengths, seed=3)
    steps = [a.take(200) for _ in range(6)]
    assert steps == [b.take(200) for _ in range(6)]
    taken = [sum(lengths[i] for i in s) for s in steps]
    for k in range(1, len(steps) + 1):   # cumulative tokens: k budgets, over by less than one example
        assert 0 <= sum(taken[:k]) - 200 * k < max(lengths)
    long, short = DataStream([400] * 5, seed=0), DataStream([90] * 50, seed=0)   # two recipes' lengths
    assert abs(sum(sum(long.lengths[i] for i in long.take(1000)) for _ in range(30)) -
               sum(sum(short.lengths[i] for i in short.take(1000)) for _ in range(30))) < 400
    resumed = DataStream(lengths, seed=3, **DataStream(lengths, seed=3).cursor())
    assert resumed.take(200) == steps[0]
    assert DataStream(lengths, seed=4).take(1000) != DataStream(lengths, seed=3).take(1000)
    with pytest.raises(TrainingError, match="no training examples"):
        DataStream([], seed=0)


@pytest.mark.parametrize("bad", [{"steps": 0}, {"steps": "5"}, {"steps": 5, "lr": 0}, {"steps": 5, "patience": -1},
                                 {"steps": 5, "target_modules": []}, {"steps": 5, "tokens_per_step": True}])
def test_bad_settings_are_refused(bad):
    with pytest.raises(TrainingError):
        TrainConfig(**bad)


def test_the_learning_rate_warms_up_and_decays():
    cfg = TrainConfig(steps=100, lr=1.0, warmup_steps=10)
    assert lr_at(0, cfg) == pytest.approx(0.1) and lr_at(10, cfg) == pytest.approx(1.0)
    assert lr_at(99, cfg) < lr_at(50, cfg) < 1.0 and lr_at(100, cfg) == pytest.approx(0.1)


def test_a_bad_model_directory_is_refused_before_training(tmp_path, images):
    examples = build_examples("stepwise", [_chain(1, images[0])])
    with pytest.raises(TrainingError, match="not a saved model"):
        train(tmp_path / "missing", examples, [], TrainConfig(steps=1), tmp_path / "out")


def test_early_stopping_keeps_the_best_adapter_and_a_torn_checkpoint_falls_back(tiny_vlm_dir, images, tmp_path):
    chains = [_chain(i, images[i]) for i in range(6)]
    train_set, val_set = build_examples("stepwise", chains[:4]), build_examples("stepwise", chains[4:])
    cfg = TrainConfig(steps=30, tokens_per_step=256, lr=0.5, eval_every=1, patience=2, checkpoint_every=1)
    result = train(tiny_vlm_dir, train_set, val_set, cfg, tmp_path / "run")   # lr 0.5 diverges: stops early
    assert result.status == "stopped_early" and result.steps < 30
    vals = [h["val_loss"] for h in result.history]
    assert result.best_val_loss == pytest.approx(min(vals), abs=1e-5)
    assert result.best_step == result.history[vals.index(min(vals))]["step"]
    # a kill between the two renames leaves checkpoint.old only: the next run resumes from it
    run = tmp_path / "run"
    shutil.move(run / "checkpoint", run / "checkpoint.old")
    trainer = Trainer(tiny_vlm_dir, train_set, val_set, cfg, run)
    assert trainer._load_checkpoint() and trainer.step == result.steps
    assert json.loads((run / "checkpoint.old" / "state.json").read_text())["finished"] == "stopped_early"


def test_the_image_token_count_learned_per_size_gives_the_processors_ids(tiny_vlm_dir, images):
    """After the first example of a size, prompts are tokenized with the placeholder expanded by the count
    learned from the processor: the ids stay exactly the processor's."""
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(str(tiny_vlm_dir), local_files_only=True)
    encoder = ExampleEncoder(processor)
    examples = build_examples("answer_only", [_chain(i, images[i]) for i in range(3)])
    for example in examples:
        encoded = encoder.encode(example)
        prompt = conversation_pieces(processor, example)[0][0]
        with Image.open(example.image) as im:
            expected = processor(text=[prompt], images=[[im.convert("RGB")]], return_tensors="pt")["input_ids"]
        assert list(encoded.input_ids[: expected.shape[1]]) == expected[0].tolist()
    assert encoder._tokens_per_size and all(encoder._tokens_per_size.values())   # the fast path was taken
