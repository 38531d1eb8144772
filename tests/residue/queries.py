"""What the probes ask: queries on the subject's facts (exact, paraphrased, misspelt, translated)
and the subject's name in other cases, Unicode forms and with stray whitespace.

Which forms are the same subject is Lethe's rule, not the suite's: a subject id is keyed in
NFC and case-sensitively (``vault.memory.validation.normal_subject_id``), so an NFD spelling
is the subject and an uppercased, fullwidth or padded one is another identifier. Those are
probed where they reach the subject before the forget (as query text); as a filter or an
export subject they find nothing before the forget, so they prove nothing after and are not
probes (``NOT_PROBES``).
"""

from __future__ import annotations

import unicodedata

from tests.residue.deployment import NAME, SUBJECT

FACT_QUERIES: dict[str, dict[str, str]] = {
    "account": {
        "exact": "Zoë Ångström loyalty account number 7731-4409",
        "paraphrase": "which membership card number does Zoë have",
        "misspelt": "Zoë Angstrom loyality acount numbr",
        "translated": "número de cuenta de fidelidad de Zoë",
    },
    "tea": {
        "exact": "Zoë drinks oolong tea with oat milk",
        "paraphrase": "what does Zoë have to drink in the morning",
        "misspelt": "Zoë oolnog tee with oatmilk",
        "translated": "Zoë trinkt morgens Oolong-Tee mit Hafermilch",
    },
    "home": {
        "exact": "Zoë lives in Tromsø",
        "paraphrase": "which town is Zoë's home and how does she commute",
        "misspelt": "Zoë livs in Tromso by the harbor",
        "translated": "Zoë habite à Tromsø et va au port à vélo",
    },
    "allergy": {
        "exact": "Zoë is allergic to hazelnuts",
        "paraphrase": "does Zoë have a nut allergy",
        "misspelt": "Zoë alergic to hazlenuts",
        "translated": "Zoë es alérgica a las avellanas",
    },
    "cello": {
        "exact": "Zoë plays the cello in a chamber orchestra",
        "paraphrase": "which instrument does Zoë play",
        "misspelt": "Zoë plays the chello in a chamber orkestra",
        "translated": "Zoë spielt Cello in einem Kammerorchester",
    },
    "seat": {
        "exact": "Zoë asks for an aisle seat on trains",
        "paraphrase": "where does Zoë like to sit when travelling",
        "misspelt": "Zoë ailse seet on trians",
        "translated": "Zoë demande une place côté couloir dans le train",
    },
}

NAME_FORMS: dict[str, str] = {
    "upper": NAME.upper(),
    "lower": NAME.lower(),
    "nfd": unicodedata.normalize("NFD", NAME),
    "fullwidth": "Ｚｏë Ångström",
    "whitespace": f"  \t{NAME.replace(' ', '   ')}  \n",
    "subject-id": SUBJECT,
}

# Spellings of the subject id that Lethe keys as this subject (a filter, an export).
SUBJECT_FORMS: dict[str, str] = {"nfc": SUBJECT, "nfd": unicodedata.normalize("NFD", SUBJECT)}

NOT_PROBES = (
    "subject id uppercased, lowercased, fullwidth or padded with whitespace, as a search or list "
    "filter or an export subject: Lethe keys ids case-sensitively in NFC, so these are other "
    "identifiers and find nothing before the forget",
    "memory id uppercased (404) or padded with whitespace (422) in GET /v1/memories/{id}: "
    "not the memory's id before the forget",
)


def search_queries() -> dict[str, str]:
    """Every search probe's query, by name: each fact's four forms, then the name's forms."""
    out = {f"{fact}/{form}": q for fact, forms in FACT_QUERIES.items() for form, q in forms.items()}
    out.update({f"name/{form}": q for form, q in NAME_FORMS.items()})
    return out
