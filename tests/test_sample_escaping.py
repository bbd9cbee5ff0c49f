"""The sample files' escaping, against text written out by hand: csv's quoting in the TSV (a tab, a quote or a line
break quotes a field, quotes doubled), JSON's escapes in the JSONL, with non-ASCII text kept as it is."""

from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq

from tasks.release.write import SampleFiles
from tasks.templates.kobbq_format import SAMPLE_COLUMNS

ROWS = [  # each written as a chunk of its own, so that each needs its own escaping
    ["s1", "ST", "지난주 할아버지를 봤다.", "누가?", "['가', 'b', '알 수 없음']", "가", "알 수 없음", "1", "Age", ""],
    ["s2", "\x01", "a\tb", "q", "[]", "", "c:\\d", "2", "Age", ""],
    ["s3", "ST", "c", 'say "hi"', "['x']", "x", "x", "3", "SES", ""],
    ["s4", "ST", "c", "q", "['x']", "x\ny", "x", "4", "SES", ""],
    ["s5", "ST", "é", "q", """["it's", 'a"b']""", "", "", "5", "SES", ""],
]

TSV = (
    "sample_id\tlabel_annotation\tcontext\tquestion\tchoices\tbiased_answer\tanswer\tbbq_id\tbbq_category\tprediction\n"
    "s1\tST\t지난주 할아버지를 봤다.\t누가?\t['가', 'b', '알 수 없음']\t가\t알 수 없음\t1\tAge\t\n"
    's2\t\x01\t"a\tb"\tq\t[]\t\tc:\\d\t2\tAge\t\n'
    's3\tST\tc\t"say ""hi"""\t[\'x\']\tx\tx\t3\tSES\t\n'
    's4\tST\tc\tq\t[\'x\']\t"x\ny"\tx\t4\tSES\t\n'
    's5\tST\té\tq\t"[""it\'s"", \'a""b\']"\t\t\t5\tSES\t\n'
)

JSONL = (
    '{"sample_id": "s1", "label_annotation": "ST", "context": "지난주 할아버지를 봤다.", "question": "누가?", '
    '"choices": ["가", "b", "알 수 없음"], "biased_answer": "가", "answer": "알 수 없음", "bbq_id": "1", '
    '"bbq_category": "Age", "prediction": ""}\n'
    '{"sample_id": "s2", "label_annotation": "\\u0001", "context": "a\\tb", "question": "q", "choices": [], '
    '"biased_answer": "", "answer": "c:\\\\d", "bbq_id": "2", "bbq_category": "Age", "prediction": ""}\n'
    '{"sample_id": "s3", "label_annotation": "ST", "context": "c", "question": "say \\"hi\\"", "choices": ["x"], '
    '"biased_answer": "x", "answer": "x", "bbq_id": "3", "bbq_category": "SES", "prediction": ""}\n'
    '{"sample_id": "s4", "label_annotation": "ST", "context": "c", "question": "q", "choices": ["x"], '
    '"biased_answer": "x\\ny", "answer": "x", "bbq_id": "4", "bbq_category": "SES", "prediction": ""}\n'
    '{"sample_id": "s5", "label_annotation": "ST", "context": "é", "question": "q", "choices": ["it\'s", "a\\"b"], '
    '"biased_answer": "", "answer": "", "bbq_id": "5", "bbq_category": "SES", "prediction": ""}\n'
)


def test_tab_quote_line_break_and_non_ascii_are_escaped_as_csv_and_json_do(tmp_path):
    with SampleFiles(tmp_path, "all.tsv") as files:
        for row in ROWS:
            files.append(pd.DataFrame([row], columns=SAMPLE_COLUMNS, dtype=object))
    assert (tmp_path / "all.tsv").read_bytes() == TSV.encode()
    assert (tmp_path / "all.jsonl").read_bytes() == JSONL.encode()
    choices = pq.read_table(tmp_path / "all.parquet").column("choices").to_pylist()
    assert choices == [["가", "b", "알 수 없음"], [], ["x"], ["x"], ["it's", 'a"b']]
