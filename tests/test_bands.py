"""The signature-band search (core/bands.py, spark/bands.py): keys, the pure group walks against brute force
(hypothesis), and the whole near-duplicate stages with bands against the brute-force definition, with and
without history."""
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F
from reference import agreeing, band_pairs, brute_force_verified, components_of, hamming, planted_signatures, usable_band

from simhash_udf.core.bands import SignatureBands, band_members, band_pairs_and_members
from simhash_udf.core.verified import VerifySpec, verify_band_groups, verify_band_pairs
from simhash_udf.job.stages import HistoryView, SearchSpecs, StageContext, StageTimer, near_duplicate_clusters

SPEC = VerifySpec(0.7, min_containment=0.0)  # the brute-force references verify by similarity alone


def _sig_matrix(sigs):
    return np.frombuffer(b"".join(sigs), dtype=np.uint8).reshape(len(sigs), -1)


def family_pages(rng, n_families: int, far: bool = True, size: int = 0, first: int = 0):
    """Fingerprints and signatures of page families: members share a base signature with 0-60% of its bins
    redrawn (planted_signatures); with `far`, every member has its own random fingerprint (copies the SimHash
    tables cannot find), else members are a few bits from the family's first. size: members a family (0:
    1-5 at random); first: the first family's number (families of two calls stay apart)."""
    fps = []
    for f in range(first, first + n_families):
        base = int(rng.integers(0, 2**63)) & ~(0xFFFFFF << 40) | (f << 40)
        for _ in range(size or int(rng.integers(1, 6))):
            fp = int(rng.integers(0, 2**40)) | (f << 40) if far else base ^ (1 << int(rng.integers(0, 40)))
            fps.append(fp - 2**64 if fp >= 2**63 else fp)
    return fps, planted_signatures(rng, fps)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_bands=st.integers(1, 16), bins=st.integers(1, 7))
def test_keys_and_first_shared_band(seed, n_bands, bins):
    if n_bands * bins > 128:
        return
    bands = SignatureBands(n_bands, bins)
    bands.check()
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, (30, 128), dtype=np.uint8)
    b = a.copy()
    b[rng.random(b.shape) < rng.choice([0.02, 0.2, 0.6])] = 7
    keys_a, keys_b = bands.keys(a), bands.keys(b)
    for r in range(30):
        for band in range(n_bands):
            part = a[r, band * bins:(band + 1) * bins]
            assert int(keys_a[r, band]) == (band << (8 * bins)) | int.from_bytes(part.tobytes(), "big")
        equal = [band for band in range(n_bands) if (a[r, band * bins:(band + 1) * bins] ==
                                                    b[r, band * bins:(band + 1) * bins]).all()]
        shared = [band for band in equal if usable_band(a[r, band * bins:(band + 1) * bins].tolist())]
        assert bands.usable(a[r:r + 1])[0].tolist() == [usable_band(a[r, x * bins:(x + 1) * bins].tolist())
                                                      for x in range(n_bands)]
        assert bands.first_shared(a[r:r + 1], b[r:r + 1])[0] == (shared[0] if shared else -1)
        assert set(np.flatnonzero(keys_a[r] == keys_b[r]).tolist()) == set(equal)


def test_invalid_band_settings_are_refused():
    for bands, bins in ((40, 4), (1, 8), (-1, 4), (2, 0)):
        with pytest.raises(ValueError):
            SignatureBands(bands, bins).check()
    assert SignatureBands(10, 4).candidate_probability(0.8) > 0.99 > SignatureBands(10, 4).candidate_probability(0.5)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(0, 6), n_bands=st.sampled_from([1, 4, 10, 100]),
       bins=st.sampled_from([1, 2, 4]), small=st.sampled_from([4, 256]), far=st.booleans(),
       pair_group=st.sampled_from([1, 3, 8, 1000]))
def test_band_group_walks_equal_brute_force(seed, k, n_bands, bins, small, far, pair_group):
    """Band key groups built in Python: the first pass keeps exactly the members with a pair more than k
    apart in their group; the second counts every band-accepted pair once (first shared band, > k bits),
    verified or rejected as brute force says, and its forest connects what the verified accepted pairs
    connect (big groups take the breadth-first path when small = 4)."""
    if n_bands * bins > 128:  # 100 bands (band masks past 64 bits) of one bin only
        return
    rng = np.random.default_rng(seed)
    bands = SignatureBands(n_bands, bins)
    fps, sigs = family_pages(rng, int(rng.integers(1, 12)), far)
    fps, first = np.unique(np.array(fps, dtype=np.int64), return_index=True)
    sigs = [sigs[i] for i in first]
    mat = _sig_matrix(sigs)
    keys, usable = bands.keys(mat), bands.usable(mat)
    groups: dict = {}
    for i in range(len(fps)):
        for b in range(n_bands):
            if usable[i, b]:
                groups.setdefault(int(keys[i, b]), []).append(i)
    order = sorted(groups)
    idx = [i for key in order for i in groups[key]]
    offsets = np.r_[0, np.cumsum([len(groups[key]) for key in order])]
    group_band = np.array([key >> (8 * bins) for key in order], dtype=np.int64)

    involved, compared = band_members(fps[idx], offsets, k)
    far_pair = lambda a, b: hamming(int(fps[a]), int(fps[b])) > k  # noqa: E731
    want = [any(far_pair(i, j) for j in groups[key] if j != i) for key in order for i in groups[key]]
    assert involved.tolist() == want
    assert compared == sum(len(m) * (len(m) - 1) // 2 for m in groups.values())

    out = verify_band_groups(fps[idx], mat[idx], offsets, group_band, k, bands, SPEC, small)
    rep = {int(f): sigs[i] for i, f in enumerate(fps)}
    pairs = band_pairs([int(f) for f in fps], rep, k, n_bands, bins)
    verified = [(a, b) for a, b in pairs if agreeing(rep[a], rep[b]) >= SPEC.need]
    assert int(out.verified_by_band.sum()) == len(verified)
    assert int(out.rejected_by_band.sum()) == len(pairs) - len(verified)
    nodes = [int(f) for f in fps]
    got = components_of(nodes, list(zip(out.src.tolist(), out.dst.tolist())))
    want_c = components_of(nodes, verified)
    assert {(got[a] == got[b]) for a in nodes for b in nodes if want_c[a] == want_c[b]} <= {True}
    assert len(set(got.values())) == len(set(want_c.values()))

    # the split the job makes: groups of up to pair_group members as their distinct far pairs with the bands
    # they were met in (verify_band_pairs), the larger groups' involved members group by group
    involved2, compared2, lo, hi, pair_of_group = band_pairs_and_members(fps[idx], offsets, k, pair_group)
    sizes = np.diff(offsets)
    big = np.repeat(sizes > pair_group, sizes)
    assert compared2 == compared and (involved2 == (involved & big)).all()
    found: dict = {}
    for a, b, g in zip(lo.tolist(), hi.tolist(), pair_of_group.tolist()):
        assert a < b and sizes[g] <= pair_group
        found.setdefault((a, b), set()).add(int(group_band[g]))
    want_found: dict = {}
    for key in order:
        m = groups[key]
        if len(m) <= pair_group:
            for x in range(len(m)):
                for y in range(x + 1, len(m)):
                    if far_pair(m[x], m[y]):
                        a, b = sorted((int(fps[m[x]]), int(fps[m[y]])))
                        want_found.setdefault((a, b), set()).add(key >> (8 * bins))
    assert found == want_found
    pos = {int(f): i for i, f in enumerate(fps)}
    listed = sorted(found)
    found_in = np.array([[sum(1 << b for b in found[p] if b < 64), sum(1 << (b - 64) for b in found[p] if b >= 64)]
                         for p in listed], np.uint64).reshape(len(listed), 2)
    ok, v_pairs, r_pairs = verify_band_pairs(
        mat[np.array([pos[a] for a, _ in listed], np.int64)], mat[np.array([pos[b] for _, b in listed], np.int64)],
        found_in, bands, SPEC)
    kept = [i for key in order for i in groups[key]]
    rows = [n for n in range(len(kept)) if involved2[n]]
    regrouped = np.r_[0, np.flatnonzero(np.diff(np.searchsorted(offsets, rows, side="right")) != 0) + 1, len(rows)]
    row_group = np.searchsorted(offsets, rows, side="right") - 1
    out2 = verify_band_groups(fps[idx][rows], mat[idx][rows], regrouped if rows else np.zeros(1, np.int64),
                              group_band[row_group[regrouped[:-1]]] if rows else np.zeros(0, np.int64), k, bands, SPEC, small)
    assert int(v_pairs.sum() + out2.verified_by_band.sum()) == len(verified)
    assert int(r_pairs.sum() + out2.rejected_by_band.sum()) == len(pairs) - len(verified)
    edges = [p for p, good in zip(listed, ok.tolist()) if good] + list(zip(out2.src.tolist(), out2.dst.tolist()))
    got2 = components_of(nodes, edges)
    assert {(got2[a] == got2[b]) for a in nodes for b in nodes if want_c[a] == want_c[b]} <= {True}
    assert len(set(got2.values())) == len(set(want_c.values()))


@pytest.fixture(scope="module")
def cluster(spark, tmp_path_factory):
    spark.sparkContext.setCheckpointDir(str(tmp_path_factory.mktemp("ckpt")))

    def run(ids, fps, sigs, k, bands, partitions=3, history=None):
        df = spark.createDataFrame(list(zip(ids, fps, sigs)), "id long, fingerprint long, signature binary")
        docs = df.repartition(partitions).withColumn("rank", F.struct(F.col("id").alias("i")))
        if history is not None:
            history = spark.createDataFrame(history, "fingerprint long, h_cluster long, h_kept_date string, "
                                                     "signature binary, kept_signature binary")
        persisted = []
        found = near_duplicate_clusters(docs, StageContext(
            SearchSpecs(k, verify=SPEC, bands=bands, max_rounds=50), StageTimer(),
            lambda d: persisted.append(d.cache()) or d.cache(),
            history=HistoryView(history, None, "2026-11-23") if history is not None else None))
        rows = {r.id: (r.cluster_id, r.kept_run_date) if history is not None else r.cluster_id
                for r in found.clusters.collect()}
        for d in persisted:
            d.unpersist()
        return rows, found.stats

    return run


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 4), partitions=st.sampled_from([1, 4]),
       layout=st.sampled_from([(10, 4), (70, 1)]))
@example(seed=1, k=2, partitions=4, layout=(70, 1))
def test_stages_with_bands_equal_brute_force_definition(cluster, seed, k, partitions, layout):
    """Families of far-apart fingerprints with similar signatures, plus near ones, some repeated with another
    signature: the job's clusters are the verified policy's over pairs within k and band pairs."""
    rng = np.random.default_rng(seed)
    far_fps, far_sigs = family_pages(rng, 12, far=True)
    near_fps, near_sigs = family_pages(rng, 8, far=False, first=12)
    big_fps, big_sigs = family_pages(rng, 1, far=True, size=12, first=20)  # band groups above PAIR_GROUP
    fps, sigs = far_fps + near_fps + big_fps, far_sigs + near_sigs + big_sigs
    fps, sigs = fps + fps[:6], sigs + planted_signatures(rng, fps[:6])
    ids = [int(i) for i in rng.permutation(len(fps)) + 1]
    bands = SignatureBands(*layout)  # 70 bands of one bin: the pair path's band masks past 64 bits
    got, stats = cluster(ids, fps, sigs, k, bands, partitions=partitions)
    want = brute_force_verified(ids, fps, sigs, k, SPEC.need, bands=layout)
    assert got == want
    assert got != brute_force_verified(ids, fps, sigs, k, SPEC.need)  # premise: the bands joined pages
    b = stats.candidates.signature_bands
    assert b.pairs_verified > 0 and b.pairs_accepted >= b.pairs_verified
    assert stats.candidates.pairs_verified + stats.candidates.pairs_rejected == stats.candidates.pairs_accepted + b.pairs_accepted


def test_history_page_sharing_a_band_is_found(cluster):
    """An earlier run's kept page K and today's copy T, 30 bits apart but with signatures that agree on
    120 of 128 bins: found through a band (and not without bands); an unrelated page U stays apart."""
    rng = np.random.default_rng(5)
    k_sig = rng.integers(0, 256, 128, dtype=np.uint8)
    t_sig = k_sig.copy()
    t_sig[::16] = rng.integers(0, 256, 8)
    kf = 0x0123456789ABCDEF
    tf = kf ^ ((1 << 30) - 1)
    history = [(kf, 100, "2026-11-20", k_sig.tobytes(), k_sig.tobytes())]
    ids, fps = [1, 2], [tf, kf ^ (0xFFFF << 20)]
    sigs = [t_sig.tobytes(), rng.integers(0, 256, 128, dtype=np.uint8).tobytes()]
    got, stats = cluster(ids, fps, sigs, 3, SignatureBands(10, 4), history=history)
    assert got == {1: (100, "2026-11-20"), 2: (2, "2026-11-23")}
    assert stats.history_fingerprints_compared == 1
    without, _ = cluster(ids, fps, sigs, 3, None, history=history)
    assert without == {1: (1, "2026-11-23"), 2: (2, "2026-11-23")}


@pytest.mark.spark
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), bins=st.sampled_from([2, 4, 5]), bits=st.sampled_from([8, 16]))
def test_sparse_bands_make_no_keys(spark, seed, bins, bits):
    """A band with fewer than min_runs runs of equal adjacent bins (a densified sparse page) makes no band row
    in Spark, exactly as SignatureBands.usable says, and usable bands make one key each, equal where the
    bands' bytes are equal."""
    from simhash_udf.core.signature import SignatureSpec, to_arrow
    from simhash_udf.spark.bands import band_rows

    spec = SignatureSpec(bits=bits)
    bands = SignatureBands(8, bins, spec)
    rng = np.random.default_rng(seed)
    n = 40
    sigs = rng.integers(0, 4, size=(n, spec.bins)).astype(spec.dtype)  # few values: many runs of equal bins
    sigs[: n // 2] = rng.integers(0, 2**bits, size=(n // 2, spec.bins)).astype(spec.dtype)
    sigs[n - 5:] = sigs[n - 10:n - 5]  # some equal signatures, so keys repeat
    fps = np.arange(n, dtype=np.int64)
    df = spark.createDataFrame([(int(f), bytes(to_arrow(sigs[i:i + 1], np.ones(1, bool))[0].as_py()))
                                for i, f in enumerate(fps)], "fingerprint long, signature binary")
    rows = band_rows(df, bands).collect()
    usable = bands.usable(sigs)
    assert 0 < usable.sum() < usable.size
    assert sorted((r["fingerprint"], r["band"]) for r in rows) == sorted(zip(*np.nonzero(usable)))
    key = {(r["fingerprint"], r["band"]): r["key"] for r in rows}
    part = lambda i, b: sigs[i, b * bins:(b + 1) * bins].tobytes()  # noqa: E731
    for (a, b1), ka in key.items():
        for (c, b2), kc in key.items():
            if b1 == b2:
                assert (ka == kc) == (part(a, b1) == part(c, b2))


def sql_band_keys(bands: SignatureBands, signature) -> list:
    """The band keys' definition as Spark SQL (what the job computed before it did so in numpy, and what the
    history's band indexes of earlier versions hold): per band, xxhash64 of the band index and the band's
    bytes, null unless the band has at least min_runs runs of equal adjacent bins."""
    nb, w = bands.band_bytes, bands.signature.bits // 8

    def key(b: int):
        start = b * nb + 1
        cells = [F.substring(signature, start + i * w, w) for i in range(bands.bins)]
        runs = sum((x != y).cast("int") for x, y in zip(cells, cells[1:])) + 1 if bands.bins > 1 else F.lit(1)
        return F.when(runs >= bands.min_runs, F.xxhash64(F.lit(b), F.substring(signature, start, nb)))

    return [key(b) for b in range(bands.bands)]


@pytest.mark.spark
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n_bands=st.integers(1, 12), bins=st.integers(1, 7), bits=st.sampled_from([8, 16]))
@example(seed=27659312, n_bands=1, bins=7, bits=8)  # a draw whose only unusable bands are the one-bin-value pages'
def test_band_keys_are_sparks_xxhash64(spark, seed, n_bands, bins, bits):
    """The band key arrays computed in numpy (SignatureBands.hashed_keys and usable) equal Spark's SQL
    expression of them, null (unusable) bands included: earlier runs' band indexes hold the SQL values."""
    from simhash_udf.core.signature import SignatureSpec
    from simhash_udf.spark.bands import band_key_arrays

    spec = SignatureSpec(bits=bits)
    bands = SignatureBands(n_bands, bins, spec)
    if bands.key_bits > 56 or n_bands * bins > spec.bins:
        return
    rng = np.random.default_rng(seed)
    n = 60
    sigs = rng.integers(0, 2**bits, size=(n, spec.bins)).astype(spec.dtype)
    sigs[: n // 3] = rng.integers(0, 3, size=(n // 3, spec.bins))  # runs of equal bins: some unusable bands
    sigs[:3] = sigs[:3, :1]  # and pages of one bin value: every band unusable once it has 2 bins or more
    df = spark.createDataFrame([(i, sigs[i].tobytes()) for i in range(n)] + [(n, None)],
                               "fingerprint long, signature binary").repartition(3)
    got = {r.fingerprint: r["keys"] for r in band_key_arrays(df, bands).collect()}
    expect = {r.fingerprint: r["keys"] for r in df.where(F.col("signature").isNotNull()).select(
        "fingerprint", F.array(*sql_band_keys(bands, F.col("signature"))).alias("keys")).collect()}
    assert got == expect
    assert any(None in keys for keys in expect.values()) or bins == 1  # (7 bins of 0-2 alone: often none)


@pytest.mark.spark
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(st.binary(min_size=0, max_size=31), min_size=1, max_size=40), first=st.integers(-2**31, 2**31 - 1))
def test_xxhash64_equals_sparks(spark, values, first):
    """core.xxhash64 gives Spark's xxhash64(int, binary) for values of every length it takes (0-31 bytes: the
    8- and 4-byte words and the single bytes)."""
    from simhash_udf.core.xxhash64 import xxhash64_bytes, xxhash64_int

    df = spark.createDataFrame([(i, v) for i, v in enumerate(values)], "i int, v binary")
    expect = dict(df.select("i", F.xxhash64(F.lit(first), "v")).collect())
    for length in {len(v) for v in values}:
        rows = [i for i, v in enumerate(values) if len(v) == length]
        raw = np.frombuffer(b"".join(values[i] for i in rows), np.uint8).reshape(len(rows), length)
        assert xxhash64_bytes(raw, xxhash64_int(first)).tolist() == [expect[i] for i in rows]
    with pytest.raises(ValueError, match="shorter than 32"):
        xxhash64_bytes(np.zeros((1, 32), np.uint8))
