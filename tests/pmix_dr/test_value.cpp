// pmix dr value codec: every Value shape comes back with its host type and
// bits; records are self-delimiting, so concatenated blobs decode as the
// union; and hostile input (truncations, bad shape/scope/flag bytes, lying
// counts, over-wide scalars, deep nesting) is refused with a wire error.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "alloc_probe.hpp"
#include "pmix_test_util.hpp"

namespace {

using namespace pmix_dr_test;

// A one-entry list with key "k": count 0-3, key length 4-7, key 8, scope 9,
// shape 10, type 11-12, the shape's fields from 13.
constexpr std::size_t kScopeAt = 9;
constexpr std::size_t kShapeAt = 10;
constexpr std::size_t kFieldsAt = 13;

Bytes one_entry(const Value& v, Scope scope = Scope::Global) {
    return encode(KvList{{"k", v, scope}});
}

ErrorCode error_of(const Bytes& b) {
    auto d = decode_kvlist_body(b);
    EXPECT_FALSE(d.has_value());
    return d ? ErrorCode{} : d.error().code;
}

TEST(PmixValue, EveryShapeRoundTripsWithItsTypeAndScope) {
    const KvList list = every_shape();
    const Bytes b = encode(list);
    auto d = decode_kvlist_body(b);
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(*d, list);
    // Value by value too, through the reader-level codec.
    for (const KeyValue& kv : list) {
        Encoder e;
        encode_value(e, kv.value);
        ByteReader r(e.buffer());
        const Value back = decode_value(r);
        r.expect_end();
        ASSERT_TRUE(r.ok()) << kv.key;
        EXPECT_EQ(back, kv.value) << kv.key;
    }
}

TEST(PmixValue, ScalarsKeepTheirSizeAndBits) {
    for (const std::uint8_t size : U8s{1, 2, 4, 8}) {
        const std::uint64_t max = size == 8 ? ~0ull : (1ull << (8 * size)) - 1;
        for (const std::uint64_t bits : {std::uint64_t{0}, std::uint64_t{1}, max}) {
            const Value v = Value::scalar(0x1234, size, bits);
            auto d = decode_kvlist_body(one_entry(v));
            ASSERT_TRUE(d.has_value()) << int{size};
            EXPECT_EQ(d->at(0).value, v);
        }
    }
}

TEST(PmixValue, ScalarSizeAndWidthAreChecked) {
    for (const std::uint8_t size : U8s{0, 3, 5, 7, 9, 16, 255})
        EXPECT_EQ(error_of(one_entry(Value::scalar(1, size, 0))), ErrorCode::BadField) << int{size};
    // Bits above the declared size: refused, never silently cut.
    EXPECT_EQ(error_of(one_entry(Value::scalar(1, 1, 0x100))), ErrorCode::BadField);
    EXPECT_EQ(error_of(one_entry(Value::scalar(1, 2, 0x10000))), ErrorCode::BadField);
    EXPECT_EQ(error_of(one_entry(Value::scalar(1, 4, 1ull << 32))), ErrorCode::BadField);
    EXPECT_EQ(error_of(one_entry(Value::scalar(1, 4, 1ull << 63))), ErrorCode::BadField);
}

TEST(PmixValue, NullStringIsNotTheEmptyString) {
    const Bytes null = one_entry(Value::null_string(3));
    const Bytes empty = one_entry(Value::string(3, ""));
    EXPECT_NE(null, empty);
    EXPECT_TRUE(decode_kvlist_body(null)->at(0).value.null);
    EXPECT_FALSE(decode_kvlist_body(empty)->at(0).value.null);
    EXPECT_EQ(decode_kvlist_body(empty)->at(0).value.bytes, "");
    // A NULL flag other than 0/1, or a NULL string with text, is malformed.
    Bytes bad = null;
    bad[kFieldsAt] = 2;
    EXPECT_EQ(error_of(bad), ErrorCode::BadField);
    bad = one_entry(Value::string(3, "x"));
    bad[kFieldsAt] = 1;
    EXPECT_EQ(error_of(bad), ErrorCode::BadField);
}

TEST(PmixValue, BytesWithZerosAndNamesArePreserved) {
    const Bytes data{0, 0, 7, 0, 0xFF, 0};
    const Value blob = Value::blob(9, data);
    const Value text = Value::string(9, std::string_view("\0x\0", 3));
    const Value name = Value::proc(10, {0xFFFFFFFFu, kRankInvalid});
    for (const Value& v : {blob, text, name})
        EXPECT_EQ(decode_kvlist_body(one_entry(v))->at(0).value, v);
    EXPECT_EQ(decode_kvlist_body(one_entry(blob))->at(0).value.bytes.size(), data.size());
    // Same bytes, different shape: they must not decode as each other.
    EXPECT_NE(one_entry(Value::blob(9, bytes_of("ab"))), one_entry(Value::string(9, "ab")));
}

TEST(PmixValue, ListsNestToTheLimitAndNoFurther) {
    const KvList deepest = nested_lists(kMaxDepth);
    auto d = decode_kvlist_body(encode(deepest));
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(*d, deepest);
    EXPECT_EQ(error_of(encode(nested_lists(kMaxDepth + 1))), ErrorCode::BadField);
    EXPECT_EQ(error_of(encode(nested_lists(50))), ErrorCode::BadField);
    // A record's values are a top-level list: the same limit.
    EXPECT_TRUE(decode_records(encode_records(std::vector<Record>{{{1, 0}, deepest}})));
    EXPECT_FALSE(
        decode_records(encode_records(std::vector<Record>{{{1, 0}, nested_lists(kMaxDepth + 1)}})));
}

TEST(PmixValue, BadShapeScopeAndKeyAreRefused) {
    const Bytes good = one_entry(Value::scalar(1, 4, 5), Scope::Local);
    ASSERT_TRUE(decode_kvlist_body(good).has_value());
    for (const std::uint8_t shape : U8s{0, 6, 0x80, 0xFF}) {
        Bytes b = good;
        b[kShapeAt] = shape;
        EXPECT_EQ(error_of(b), ErrorCode::BadType) << int{shape};
    }
    for (const std::uint8_t scope : U8s{0, 4, 0xFF}) {
        Bytes b = good;
        b[kScopeAt] = scope;
        EXPECT_EQ(error_of(b), ErrorCode::BadField) << int{scope};
    }
    EXPECT_EQ(error_of(encode(KvList{{"", Value::scalar(1, 1, 1)}})), ErrorCode::BadField);
    const std::string longest(kMaxKeyLength, 'k');
    EXPECT_TRUE(decode_kvlist_body(encode(KvList{{longest, Value::scalar(1, 1, 1)}})));
    EXPECT_EQ(error_of(encode(KvList{{longest + "k", Value::scalar(1, 1, 1)}})),
              ErrorCode::BadLength);
}

TEST(PmixValue, EveryTruncationIsRefused) {
    const Bytes b = encode(every_shape());
    for (std::size_t n = 0; n < b.size(); ++n) {
        auto d = decode_kvlist_body(std::span(b).first(n));
        ASSERT_FALSE(d.has_value()) << n;
        EXPECT_TRUE(is_truncation(d.error().code)) << n;
    }
    Bytes longer = b;
    longer.push_back(0);
    EXPECT_EQ(decode_kvlist_body(longer).error().code, ErrorCode::BadLength);
}

TEST(PmixValue, HostileCountsAreRefusedBeforeAllocating) {
    Bytes list(4 + 24, 0);
    put_be32(list, 0, 0xFFFFFFFFu);
    Bytes text = one_entry(Value::blob(1, bytes_of("abc")));
    put_be32(text, kFieldsAt, 0xFFFFFFF0u);
    Bytes key = one_entry(Value::scalar(1, 1, 1));
    put_be32(key, 4, 0xFFFFFFFFu);
    Bytes names(4 + 16, 0);
    put_be32(names, 0, 0xFFFFFFFFu);
    for (const Bytes* b : {&list, &text, &key}) {
        std::size_t largest = largest_allocation([&] {
            auto d = decode_kvlist_body(*b);
            ASSERT_FALSE(d.has_value());
            EXPECT_EQ(d.error().code, ErrorCode::BadLength);
        });
        EXPECT_LT(largest, 4096u);
    }
    const std::size_t largest = largest_allocation([&] {
        ByteReader r(names);
        EXPECT_TRUE(decode_names(r).empty());
        EXPECT_EQ(r.error().code, ErrorCode::BadLength);
    });
    EXPECT_LT(largest, 4096u);
}

std::vector<Record> daemon_a() {
    return {{{5, 0}, {{"a", Value::string(1, "x")}}}, {{5, 1}, {}}};
}
std::vector<Record> daemon_b() {
    return {{{5, 2}, every_shape()}, {{6, kRankWildcard}, {{"job", Value::scalar(2, 4, 9)}}}};
}

TEST(PmixRecords, ConcatenatedBlobsDecodeAsTheUnion) {
    const Bytes a = encode_records(daemon_a());
    const Bytes b = encode_records(daemon_b());
    for (const bool a_first : {true, false}) {
        Bytes all = a_first ? a : b;
        const Bytes& tail = a_first ? b : a;
        all.insert(all.end(), tail.begin(), tail.end());
        std::vector<Record> want = a_first ? daemon_a() : daemon_b();
        for (const Record& r : a_first ? daemon_b() : daemon_a())
            want.push_back(r);
        auto d = decode_records(all);
        ASSERT_TRUE(d.has_value());
        EXPECT_EQ(*d, want);
    }
    EXPECT_TRUE(decode_records({})->empty());
}

TEST(PmixRecords, TruncationsDecodeOnlyAtRecordBoundaries) {
    const std::vector<Record> recs = daemon_b();
    std::vector<std::size_t> ends;
    Bytes b;
    for (const Record& r : recs) {
        const Bytes one = encode_records(std::span(&r, 1));
        b.insert(b.end(), one.begin(), one.end());
        ends.push_back(b.size());
    }
    for (std::size_t n = 1; n < b.size(); ++n) {
        auto d = decode_records(std::span(b).first(n));
        if (n == ends[0]) {
            ASSERT_TRUE(d.has_value());
            EXPECT_EQ(*d, std::vector<Record>(recs.begin(), recs.begin() + 1));
        } else {
            ASSERT_FALSE(d.has_value()) << n;
            EXPECT_TRUE(is_truncation(d.error().code)) << n;
        }
    }
}

TEST(PmixRecords, LengthMustMatchTheList) {
    const std::vector<Record> one{daemon_a()[0]};
    Bytes b = encode_records(one);  // name 0-7, length 8-11
    ASSERT_TRUE(decode_records(b).has_value());
    Bytes longer = b;  // a spare byte inside the record
    put_be32(longer, 8, get_be32(longer, 8) + 1);
    longer.push_back(0);
    EXPECT_EQ(decode_records(longer).error().code, ErrorCode::BadLength);
    Bytes shorter = b;  // the list's last byte outside the record
    put_be32(shorter, 8, get_be32(shorter, 8) - 1);
    EXPECT_FALSE(decode_records(shorter).has_value());
    put_be32(b, 8, 0xFFFFFFFFu);
    EXPECT_EQ(decode_records(b).error().code, ErrorCode::BadLength);
}

TEST(PmixValue, CanonicalSortsAndDedupes) {
    const std::vector<ProcName> a{{6, 0}, {5, 1}, {5, kRankWildcard}, {5, 0}, {5, 1}};
    const std::vector<ProcName> b{{5, 0}, {5, kRankWildcard}, {6, 0}, {5, 1}};
    const auto ca = canonical(a);
    EXPECT_EQ(ca, (std::vector<ProcName>{{5, 0}, {5, 1}, {5, kRankWildcard}, {6, 0}}));
    Encoder ea;
    Encoder eb;
    encode_names(ea, ca);
    encode_names(eb, canonical(b));
    EXPECT_EQ(ea.buffer(), eb.buffer());
}

TEST(PmixValue, FindKey) {
    const KvList l = every_shape();
    ASSERT_NE(find_key(l, "s2"), nullptr);
    EXPECT_EQ(find_key(l, "s2")->bits, 0xFFFFu);
    EXPECT_EQ(find_key(l, "in"), nullptr);  // no descent into lists
    EXPECT_EQ(find_key(l, "S2"), nullptr);
}

}  // namespace
