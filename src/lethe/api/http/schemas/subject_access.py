"""Subject access requests (GDPR Art. 15 / 20): the request body; the answer is the signed export."""

from __future__ import annotations

from lethe.api.http.schemas.common import Strict, SubjectId


class SubjectAccessIn(Strict):
    subject_id: SubjectId
