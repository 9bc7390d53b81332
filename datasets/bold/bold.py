"""BOLD: Bias in Open-ended Language generation Dataset (Dhamala et al., FAccT 2021).

A `datasets` loading script, self-contained so that it can be uploaded to the Hub alone.
One row per prompt; prompts come from English Wikipedia sentences, cut after the first
words that name a profession, person, religious belief or political ideology (Section 3.2).

Source: github.com/amazon-science/bold at a pinned commit, checksummed; or a local folder
with the same `prompts/` and `wikipedia/` layout given as `data_dir` (or `$BOLD_DATA_DIR`).
"""

import hashlib
import json
import os
from dataclasses import dataclass

import datasets

CITATION = """\
@inproceedings{dhamala2021bold,
  author    = {Dhamala, Jwala and Sun, Tony and Kumar, Varun and Krishna, Satyapriya and
               Pruksachatkun, Yada and Chang, Kai-Wei and Gupta, Rahul},
  title     = {{BOLD}: Dataset and Metrics for Measuring Biases in Open-Ended Language Generation},
  booktitle = {Proceedings of the 2021 ACM Conference on Fairness, Accountability, and Transparency},
  series    = {FAccT '21},
  year      = {2021},
  pages     = {862--872},
  publisher = {Association for Computing Machinery},
  address   = {New York, NY, USA},
  doi       = {10.1145/3442188.3445924},
  url       = {https://doi.org/10.1145/3442188.3445924}
}
"""

DESCRIPTION = """\
BOLD (Bias in Open-ended Language generation Dataset) holds 23,679 English prompts taken from
Wikipedia for benchmarking social biases of open-ended text generation in five domains:
profession, gender, race, religious ideology and political ideology (43 groups). Each prompt
comes with the Wikipedia sentence it was cut from.
"""

HOMEPAGE = "https://github.com/amazon-science/bold"
LICENSE = "cc-by-sa-4.0"
_VERSION = "1.0.0"

UPSTREAM_COMMIT = "3ad652c773f5d1e30d5f6f61657ed934d768ecad"
UPSTREAM_URL = f"https://raw.githubusercontent.com/amazon-science/bold/{UPSTREAM_COMMIT}/"
DATA_DIR_ENV = "BOLD_DATA_DIR"

# Domain order is the row order of the `all` config (Section 3.1).
DOMAINS = ("gender", "race", "profession", "religious_ideology", "political_ideology")

# sha256 of the upstream files at UPSTREAM_COMMIT; a download that differs is rejected.
SHA256 = {
    "prompts/gender_prompt.json": "a863aaf2492e3c911c39f435005abee2eba5f5edabe836e97de110cd83273054",
    "prompts/political_ideology_prompt.json": "a83ea7cc272971b618231e13bcb5c1d1be5b208c92135c4ffde85be31f8ab4c6",
    "prompts/profession_prompt.json": "5508012069f20419559417e64d8bb2b8d864ebf8afedd21e5ca564393c291794",
    "prompts/race_prompt.json": "200337f6c43b09671e580b1df6aea2cdc0196ee02779260e9881da07029e1cb6",
    "prompts/religious_ideology_prompt.json": "633830ea87d569e5476895a93f68b8f686cb0dcae6d67a1091a9247c5c4c931d",
    "wikipedia/gender_wiki.json": "a6f3bb5139dc4e4615e199dfd56a971a5829b09cb78c790d6cad554e4b9111dc",
    "wikipedia/political_ideology_wiki.json": "a07fe5ec08abe793318c6394c397d9515c233ded7079c1ad9e947c546dc88fa6",
    "wikipedia/profession_wiki.json": "3d5f719a131e06d32d3bff709c613fc52c818c391262240cf0017522b3ed04a2",
    "wikipedia/race_wiki.json": "f87f64909db217119c1bca8e4f610876ae3bb48461b77ac863f09cc90e99c132",
    "wikipedia/religious_ideology_wiki.json": "094982f89659966d17e6c264f3abd8feae0415bb982e32166de93ea881bc63ef",
}

# Table 3: the profession groups aggregated into four super-groups
# (3,009 / 4,153 / 1,699 / 1,173 prompts). `professional_driver_types` and
# `corporate_titles` belong to none of them, like the rows of the other domains ("").
PROFESSION_CATEGORIES = {
    "arts_and_entertainment": (
        "dance_occupations",
        "film_and_television_occupations",
        "entertainer_occupations",
        "writing_occupations",
        "artistic_occupations",
        "theatre_personnel",
    ),
    "science_and_technology": ("engineering_branches", "computer_occupations", "scientific_occupations"),
    "industrial_and_manufacturing": (
        "metalworking_occupations",
        "industrial_occupations",
        "railway_industry_occupations",
        "sewing_occupations",
    ),
    "healthcare_and_medicine": ("healthcare_occupations", "nursing_specialties", "mental_health_occupations"),
}
GROUP_CATEGORY = {group: category for category, groups in PROFESSION_CATEGORIES.items() for group in groups}

FEATURES = datasets.Features(
    {
        "prompt_id": datasets.Value("string"),
        "domain": datasets.Value("string"),
        "group": datasets.Value("string"),
        "name": datasets.Value("string"),
        "category": datasets.Value("string"),
        "prompt": datasets.Value("string"),
        "wikipedia": datasets.Value("string"),
    }
)


def source_files(domain: str) -> tuple[str, str]:
    """Relative paths of a domain's prompt file and Wikipedia file, as laid out upstream."""
    return f"prompts/{domain}_prompt.json", f"wikipedia/{domain}_wiki.json"


def category_of(domain: str, group: str) -> str:
    """The Table 3 super-group of a profession group; "" for everything else."""
    return GROUP_CATEGORY.get(group, "") if domain == "profession" else ""


def prompt_id(domain: str, group: str, name: str, index: int) -> str:
    """Stable row id: the upstream keys and the position in the upstream list."""
    return f"{domain}/{group}/{name}/{index}"


def _read_json(path: str) -> dict:
    def reject_duplicates(pairs: list) -> dict:
        keys = [key for key, _ in pairs]
        duplicates = sorted({key for key in keys if keys.count(key) > 1})
        if duplicates:
            raise ValueError(f"{path}: duplicate key(s) {duplicates}; a JSON loader would silently drop prompts")
        return dict(pairs)

    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle, object_pairs_hook=reject_duplicates)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON: {error}") from error
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected an object {{group: {{name: [text, ...]}}}}, got {type(data).__name__}")
    return data


def read_domain(domain: str, prompts_path: str, wikipedia_path: str) -> list[dict]:
    """Flatten one domain's two upstream files into rows, checking that they align 1:1.

    Order: upstream group order, then name order, then list position.
    """
    prompts, wikipedia = _read_json(prompts_path), _read_json(wikipedia_path)
    rows = []
    for group, names in prompts.items():
        if not isinstance(names, dict):
            raise ValueError(f"{prompts_path}: group {group!r} should map names to lists of prompts")
        if not isinstance(wikipedia.get(group), dict):
            raise ValueError(f"{wikipedia_path}: group {group!r} of {prompts_path} is missing")
        for name, texts in names.items():
            sources = wikipedia[group].get(name)
            if sources is None:
                raise ValueError(f"{wikipedia_path}: group {group!r}, name {name!r} of {prompts_path} is missing")
            if not isinstance(texts, list) or not isinstance(sources, list):
                raise ValueError(f"{prompts_path}: group {group!r}, name {name!r} should be a list of strings")
            if len(texts) != len(sources):
                raise ValueError(
                    f"{prompts_path} and {wikipedia_path} do not align: group {group!r}, name {name!r} has "
                    f"{len(texts)} prompts but {len(sources)} Wikipedia sentences"
                )
            for index, (prompt, sentence) in enumerate(zip(texts, sources, strict=True)):
                if not isinstance(prompt, str) or not isinstance(sentence, str):
                    raise ValueError(
                        f"{prompts_path}: group {group!r}, name {name!r}, index {index} is not a string"
                    )
                rows.append(
                    {
                        "prompt_id": prompt_id(domain, group, name, index),
                        "domain": domain,
                        "group": group,
                        "name": name,
                        "category": category_of(domain, group),
                        "prompt": prompt.strip(),
                        "wikipedia": sentence.strip(),
                    }
                )
        extra_names = [name for name in wikipedia[group] if name not in names]
        if extra_names:
            raise ValueError(
                f"{wikipedia_path}: group {group!r}, name(s) {extra_names} have no prompts in {prompts_path}"
            )
    extra = [group for group in wikipedia if group not in prompts]
    if extra:
        raise ValueError(f"{wikipedia_path}: group(s) {extra} have no prompts in {prompts_path}")
    if not rows:  # never a silently missing domain (BOLD has 639 to 10,195 prompts per domain, Table 1)
        raise ValueError(f"{prompts_path} holds no prompts for domain {domain!r}; BOLD has prompts in every domain")
    return rows


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass
class BoldConfig(datasets.BuilderConfig):
    """A config selects the domains to load: all five, or one."""

    domains: tuple = DOMAINS


class Bold(datasets.GeneratorBasedBuilder):
    """BOLD prompts with their Wikipedia source sentences; one split, `test`."""

    VERSION = datasets.Version(_VERSION)
    BUILDER_CONFIG_CLASS = BoldConfig
    BUILDER_CONFIGS = [
        BoldConfig(name="all", version=_VERSION, domains=DOMAINS, description="All five domains (23,679 prompts)."),
    ] + [
        BoldConfig(name=domain, version=_VERSION, domains=(domain,), description=f"The {domain} domain.")
        for domain in DOMAINS
    ]
    DEFAULT_CONFIG_NAME = "all"

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description=DESCRIPTION,
            features=FEATURES,
            homepage=HOMEPAGE,
            license=LICENSE,
            citation=CITATION,
        )

    def _split_generators(self, dl_manager: datasets.DownloadManager) -> list[datasets.SplitGenerator]:
        relative = [path for domain in self.config.domains for path in source_files(domain)]
        # The folder comes only from the config (not from the environment) so that it is part of
        # the cache key; bold_eval.data.bold.load_bold resolves $BOLD_DATA_DIR and passes it here.
        local = self.config.data_dir
        if local:
            files = {path: os.path.join(local, path) for path in relative}
            for path, full in files.items():
                if not os.path.isfile(full):
                    raise FileNotFoundError(
                        f"BOLD file {path} not found in data folder {local} (looked for {full}). The folder "
                        f"(data_dir=, or ${DATA_DIR_ENV} for bold_eval.data.bold.load_bold) needs the upstream "
                        "prompts/ and wikipedia/ layout."
                    )
        else:
            files = dl_manager.download({path: UPSTREAM_URL + path for path in relative})
            for path, downloaded in files.items():
                got = _sha256(downloaded)
                if got != SHA256[path]:
                    raise ValueError(
                        f"checksum mismatch for {UPSTREAM_URL + path}: sha256 {got}, expected {SHA256[path]}"
                    )
        return [
            datasets.SplitGenerator(
                name=datasets.Split.TEST,
                gen_kwargs={
                    "domains": list(self.config.domains),
                    "prompts_paths": [files[source_files(domain)[0]] for domain in self.config.domains],
                    "wikipedia_paths": [files[source_files(domain)[1]] for domain in self.config.domains],
                },
            )
        ]

    def _generate_examples(self, domains: list, prompts_paths: list, wikipedia_paths: list):
        for domain, prompts_path, wikipedia_path in zip(domains, prompts_paths, wikipedia_paths, strict=True):
            for row in read_domain(domain, prompts_path, wikipedia_path):
                yield row["prompt_id"], row
