"""A small made-up conversation in LoCoMo's release shape (our own text, not LoCoMo's), for the docs and the
notebook when no copy of LoCoMo is at hand."""

from __future__ import annotations

__all__ = ["demo_conversation"]


def _t(s: int, i: int, speaker: str, text: str, **extra) -> dict:
    return {"speaker": speaker, "dia_id": f"D{s}:{i}", "text": text, **extra}


def demo_conversation() -> dict:
    """Three sessions between Ana and Ben, with observations, summaries and QA of every category.

    Examples
    --------
    >>> from memaudit.locomo.reader import conversations_from_data
    >>> shape, (conv,) = conversations_from_data(demo_conversation(), path="demo.json")
    >>> shape, conv.id, len(conv.sessions), len(conv.qa)
    ('release', 'demo', 3, 8)
    """
    return {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_1_date_time": "6:10 pm on 3 March, 2024",
        "session_1": [
            _t(1, 1, "Ana", "Hi Ben! I ran my first 10k race yesterday."),
            _t(1, 2, "Ben", "Congratulations! How did it go?"),
            _t(1, 3, "Ana", "Slow but happy: 58 minutes. My sister Lena cheered the whole way."),
            _t(1, 4, "Ben", "I started learning the cello last month.", img_url=["http://example.org/c.jpg"],
               blip_caption="a photo of a cello leaning on a chair", query="cello beginner"),
            _t(1, 5, "Ana", "A cello! That is a big instrument to carry around."),
        ],
        "session_2_date_time": "11:30 am on 17 March, 2024",
        "session_2": [
            _t(2, 1, "Ben", "My teacher says I should practise every morning."),
            _t(2, 2, "Ana", "Lena and I are planning a trip to Lisbon in May."),
            _t(2, 3, "Ben", "Lisbon is lovely. Try the custard tarts."),
            _t(2, 4, "Ana", "We will! Last week I also signed up for a half marathon."),
        ],
        "session_3_date_time": "8:05 pm on 2 April, 2024",
        "session_3": [
            _t(3, 1, "Ana", "I had to skip training: my knee hurts since Sunday."),
            _t(3, 2, "Ben", "Rest it. I played my first piece, a simple minuet, for my teacher."),
            _t(3, 3, "Ana", "Well done! Did she like it?"),
            _t(3, 4, "Ben", "She said my bowing is getting steadier."),
        ],
        "session_1_observation": {
            "Ana": [["Ana ran her first 10k race on 2 March 2024 in 58 minutes.", "D1:1"],
                    ["Ana's sister Lena cheered for her at the race.", "D1:3"]],
            "Ben": [["Ben started learning the cello in February 2024.", "D1:4"]],
        },
        "session_2_observation": {
            "Ana": [["Ana and Lena plan a trip to Lisbon in May.", "D2:2"],
                    ["Ana signed up for a half marathon.", "D2:4"]],
            "Ben": [["Ben's cello teacher wants him to practise every morning.", "D2:1"]],
        },
        "session_3_observation": {
            "Ana": [["Ana's knee hurts, so she skipped training.", "D3:1"]],
            "Ben": [["Ben played a minuet for his teacher, who praised his bowing.", ["D3:2", "D3:4"]]],
        },
        "session_1_summary": "On 3 March 2024 Ana told Ben about her first 10k race, run the day before in 58 "
                             "minutes with her sister Lena cheering; Ben had started the cello.",
        "session_2_summary": "On 17 March 2024 Ben said his teacher wants daily practice; Ana and Lena plan a "
                             "trip to Lisbon in May, and Ana signed up for a half marathon.",
        "session_3_summary": "On 2 April 2024 Ana's knee kept her from training; Ben played a minuet for his "
                             "teacher.",
        "qa": [
            {"question": "When did Ana run her first 10k race?", "answer": "2 March 2024", "evidence": ["D1:1"],
             "category": 2},
            {"question": "How long did Ana's first 10k take?", "answer": "58 minutes", "evidence": ["D1:3"],
             "category": 4},
            {"question": "Which instrument does Ben learn?", "answer": "cello", "evidence": ["D1:4"], "category": 4},
            {"question": "Who supports Ana's running?", "answer": "Lena", "evidence": ["D1:3", "D2:2"],
             "category": 1},
            {"question": "When did Ana sign up for a half marathon?", "answer": "The week before 17 March 2024",
             "evidence": ["D2:4"], "category": 2},
            {"question": "Would Ben's teacher approve of his progress?", "answer": "Likely yes",
             "evidence": ["D3:2", "D3:4"], "category": 3},
            {"question": "What did Ben play for his teacher?", "answer": "a simple minuet", "evidence": ["D3:2"],
             "category": 4},
            {"question": "Which city did Ben visit in May?", "adversarial_answer": "Lisbon", "evidence": ["D2:2"],
             "category": 5},
        ],
    }
