from pathlib import Path

import evaluate
from evaluate.utils import launch_gradio_widget

# This folder (the Space's root once published), so the widget runs the code next to it.
module = evaluate.load(str(Path(__file__).resolve().parent / "gender_polarity.py"))
launch_gradio_widget(module)
