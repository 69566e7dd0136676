"""Tiny transformers models with a Chinese character vocabulary, built and saved by the tests themselves.

They load through the same `from_pretrained(path)` code path a user's bert-base-chinese or GPT-2 takes,
with no download. Weights are seeded, so scores are reproducible across runs.
"""
from __future__ import annotations

from pathlib import Path

CHARS = ("的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而"
         "方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开"
         "它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条"
         "只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边"
         "流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百"
         "规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场身车例真务"
         "具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记需段研界拉林律叫且究观越"
         "织装影算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除消构府"
         "称太准精值号率族维划选标写存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局照参红"
         "细引听该铁价严龙飞答案医疗金融新闻法院教育学术患者银行利润股票公司文档")


def write_vocab(path: Path) -> list[str]:
    """A BERT-style vocab.txt: special tokens, ASCII, then the characters above (deduplicated)."""
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    ascii_tokens = [chr(c) for c in range(33, 127)]
    ascii_tokens += ["##" + chr(c) for c in range(33, 127)]  # so WordPiece can spell any ASCII word
    seen, chars = set(), []
    for ch in CHARS:
        if ch not in seen:
            seen.add(ch)
            chars.append(ch)
    vocab = specials + ascii_tokens + chars
    path.write_text("\n".join(vocab) + "\n", encoding="utf-8")
    return vocab


def _bert_tokenizer(directory: Path, max_length: int):
    from transformers import AutoTokenizer

    write_vocab(directory / "vocab.txt")
    (directory / "config.json").write_text('{"model_type": "bert"}', encoding="utf-8")  # replaced by save_pretrained
    return AutoTokenizer.from_pretrained(str(directory), model_max_length=max_length)


def tiny_bert(directory, num_labels: int | None = None, id2label: dict | None = None, max_length: int = 128,
              seed: int = 0) -> Path:
    """A 2-layer BERT (a masked-LM-free BertModel, or a sequence classifier when num_labels is given)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertModel

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = _bert_tokenizer(directory, max_length)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=max_length)
    torch.manual_seed(seed)
    if num_labels is not None:
        config.num_labels = num_labels
        if id2label:
            config.id2label = {int(k): v for k, v in id2label.items()}
            config.label2id = {v: int(k) for k, v in id2label.items()}
        model = BertForSequenceClassification(config)
    else:
        model = BertModel(config)
    model.eval()
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def tiny_gpt2(directory, max_length: int = 64, seed: int = 0) -> Path:
    """A 2-layer GPT-2 whose tokenizer splits Chinese into characters (a BERT WordPiece vocab of characters)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = _bert_tokenizer(directory, max_length)
    config = GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=2, n_positions=max_length,
                        bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id,
                        pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(config)
    model.eval()
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
