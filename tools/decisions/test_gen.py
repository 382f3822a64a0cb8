#!/usr/bin/env python3
"""Unit tests of the scenario generator (ctest decisions:generator)."""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PIPELINE = os.path.join(ROOT, "pipelines", "decide-verify.yaml")
sys.path.insert(0, HERE)
import gen  # noqa: E402
import vocab  # noqa: E402
import scenarios as sc  # noqa: E402
from gen import read_text  # noqa: E402


def generate(out, seed=20, n=300):
    subprocess.run([sys.executable, os.path.join(HERE, "gen.py"), "--pipeline", PIPELINE, "--out", out,
                    "--seed", str(seed), "--kev", str(n), "--laya", str(n)], check=True)
    files = {}
    for f in sorted(os.listdir(out)):
        with open(os.path.join(out, f), "rb") as fh:
            files[f] = fh.read()
    return files


def jsonl(path):
    return [json.loads(line) for line in read_text(path).splitlines()]


class Generator(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.a = os.path.join(cls.tmp.name, "a")
        cls.files = generate(cls.a)
        cls.kev = cls.files["kev-train.txt"].decode()
        cls.laya = cls.files["laya-train.txt"].decode()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_same_seed_gives_byte_identical_files(self):
        self.assertEqual(generate(os.path.join(self.tmp.name, "b")), self.files)

    def test_another_seed_gives_other_data(self):
        other = generate(os.path.join(self.tmp.name, "c"), seed=21)
        self.assertNotEqual(other["kev-train.txt"], self.files["kev-train.txt"])
        self.assertNotEqual(other["scenarios-heldout.jsonl"], self.files["scenarios-heldout.jsonl"])

    def test_heldout_frames_and_slot_values_never_appear_in_training_text(self):
        train = self.kev + self.laya
        for frame in sc.FRAMES_HELDOUT:
            self.assertNotIn(frame.split("{fact}")[0], train, frame)
        for key, values in sc.SLOTS_HELDOUT.items():
            for v in values:
                if key not in ("n", "ms"):  # numbers are short: they occur inside other words
                    self.assertNotIn(v, train, v)

    def test_heldout_situations_are_not_training_situations(self):
        for t in jsonl(os.path.join(self.a, "scenarios-heldout.jsonl")):
            self.assertNotIn("Situation: " + t["input"] + "\n", self.kev)
            self.assertIn(t["expected"], sc.LABELS)

    def test_heldout_labels_are_balanced(self):
        labels = [t["expected"] for t in jsonl(os.path.join(self.a, "scenarios-heldout.jsonl"))]
        self.assertEqual({l: labels.count(l) for l in sc.LABELS}, {l: len(labels) // 4 for l in sc.LABELS})

    def test_verifier_examples_pass_right_and_reject_wrong_decisions(self):
        for t in jsonl(os.path.join(self.a, "laya-heldout.jsonl")):
            self.assertIn(t["proposed"], sc.LABELS)
        for ex in self.laya.split("[[end]]\n")[:-1]:
            answer = json.loads(ex.rsplit("<|im_start|>assistant\n", 1)[1])
            proposed = ex.split("Chosen strategy: ")[1].split("\n")[0]
            self.assertEqual(answer["verdict"] == "pass", answer["reason"].endswith(proposed + " fits"), ex)
            self.assertLessEqual(len(answer["reason"]), 120)  # the schema's maxLength

    def test_training_text_is_the_pipelines_chatml_prompt_plus_answer(self):
        stages = gen.read_stages(PIPELINE)
        first = self.kev.split("[[end]]\n")[0]
        system = stages["decide"]["system"]
        self.assertTrue(first.startswith("<|im_start|>system\n" + system + "<|im_end|>\n<|im_start|>user\nSituation: "))
        self.assertIn("\nCandidate strategies: cache, retry, escalate, abort\n", first)
        self.assertIn(first.rsplit("\n", 1)[1], sc.LABELS)

    def test_verify_only_pipeline_renders_the_verify_prompt(self):
        text = read_text(os.path.join(self.a, "verify-only.yaml"))
        self.assertIn("{{vars.proposed}}", text)
        self.assertNotIn("decide.output", text)
        self.assertEqual(gen.read_stages(os.path.join(self.a, "verify-only.yaml"))["verify"]["system"],
                         gen.read_stages(PIPELINE)["verify"]["system"])

    def test_heldout_paraphrases_never_appear_in_training_text(self):
        train = (self.kev + self.laya).lower()
        for label, facts in sc.FACTS.items():
            for fact in facts:
                words = re.split(r"\{\w+\}", fact[-1])
                self.assertNotIn(max(words, key=len).lower(), train, fact[-1])

    def test_vocabulary_tokenizes_prompts_into_fixed_pieces_and_round_trips(self):
        stages = gen.read_stages(PIPELINE)
        corpus = self.kev.split(gen.EOS + "\n")[:50]
        v = vocab.Vocab.build(gen.EOS, gen.constant_pieces(stages), corpus, 700)
        self.assertEqual(len(v.tokens), 700)
        for text in ("Monitoring says the disk of db-02 is full.", "We just noticed ünïcode", "a  b", " x"):
            prompt = gen.kev_prompt(stages, text)
            ids = v.encode(prompt)
            self.assertEqual(v.decode(ids), prompt.replace(gen.EOS, ""))
            self.assertLessEqual(ids.count(v.id[gen.EOS]), 0)
        ids = v.encode(gen.kev_prompt(stages, "x"))  # 3 fixed pieces, "▁" "x" and the empty feedback's "▁"
        self.assertEqual([v.types[i] for i in ids], [vocab.USER_DEFINED, 1, 1, vocab.USER_DEFINED, 1, vocab.USER_DEFINED])

    def test_spm_merges_by_score_then_leftmost(self):
        v = vocab.Vocab(["<unk>", "a", "b", "c", "ab", "bc", "abc"], [0, 0, 0, 0, -2.0, -1.0, -3.0], [2, 1, 1, 1, 1, 1, 1])
        self.assertEqual(v.spm_word("abc"), [6])  # bc (score -1) before ab (-2), then a + bc = abc
        self.assertEqual(v.spm_word("abab"), [4, 4])  # equal scores: leftmost first


if __name__ == "__main__":
    unittest.main()
