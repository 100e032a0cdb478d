// The Jinja engine for chat templates: real models' templates rendered byte for byte as
// transformers renders them (tests/fixtures/chat_templates, make_chat_template_fixtures.py), and
// the language itself, its Python values and its refusals checked against jinja2 3.1's results
// in transformers' environment (trim_blocks, lstrip_blocks, loopcontrols, its tojson).
#include "mt/text/jinja.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "mt/error.h"
#include "test_support.h"

namespace mt::text::jinja {
namespace {

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// Renders `source` with `context` (JSON); an error renders as "ERROR: <message>".
std::string render(std::string_view source, std::string_view context = "{}") {
    try {
        return Template(source).render(Value::from_json(context));
    } catch (const Error& e) {
        return std::string("ERROR: ") + e.what();
    }
}

// Whether rendering fails with a message containing `part`.
::testing::AssertionResult fails_with(std::string_view source, const std::string& part,
                                      std::string_view context = "{}") {
    const std::string r = render(source, context);
    if (r.starts_with("ERROR: ") && r.find(part) != std::string::npos)
        return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "rendered " << r << ", expected an error with " << part;
}

TEST(JinjaChatTemplates, RenderAsTransformersDoes) {
    const auto dir = test::fixtures_dir() / "chat_templates";
    const Value expected = Value::from_json(read_file(dir / "expected.json"));
    std::tm now{};  // "2025-03-07T14:05:09"
    std::istringstream(expected.get("now").as_string()) >> std::get_time(&now, "%Y-%m-%dT%H:%M:%S");
    std::map<std::string, Template> templates;
    size_t checked = 0;
    for (const Value& c : expected.get("cases").items()) {
        const std::string file = c.get("template").as_string();
        SCOPED_TRACE(file + " / " + c.get("conversation").as_string());
        auto it = templates.find(file);
        if (it == templates.end())
            it = templates.emplace(file, Template(read_file(dir / file))).first;
        const Value context = c.get("context");
        if (c.get("output").is_string()) {
            EXPECT_EQ(it->second.render(context, now), c.get("output").as_string());
        } else if (c.get("raised").is_string()) {
            try {
                it->second.render(context, now);
                ADD_FAILURE() << "rendered instead of raising " << c.get("raised").as_string();
            } catch (const Error& e) {
                EXPECT_EQ(e.what(),
                          "chat template raised an exception: " + c.get("raised").as_string());
            }
        } else {  // jinja2 failed (its own message): so must we
            EXPECT_THROW(it->second.render(context, now), Error) << c.get("error").as_string();
        }
        ++checked;
    }
    EXPECT_GE(checked, 100u);
    EXPECT_GE(templates.size(), 12u);
}

TEST(Jinja, WhitespaceControlAsTransformersSetsIt) {
    // trim_blocks: the newline after a block tag goes; lstrip_blocks: its line's indentation.
    EXPECT_EQ(render("a\n  {% if true %}\n    b\n  {% endif %}\nc"), "a\n    b\nc");
    EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif %}\n"), "ab");
    EXPECT_EQ(render("x {{- ' y ' -}} z"), "x y z");
    EXPECT_EQ(render("a\n  {{ 'b' }}\n"), "a\n  b");  // {{ }} is not stripped; one final \n goes
    EXPECT_EQ(render("a\n  {%+ if true %}b{% endif %}"), "a\n  b");
    EXPECT_EQ(render("a {# c #}\nb\n  {# d #}\nc"), "a b\nc");
    EXPECT_EQ(render("{% raw %}{{ x }}{% endraw %}"), "{{ x }}");
    EXPECT_EQ(render("a\r\nb\rc\n\n"), "a\nb\nc\n");
    EXPECT_EQ(render("{% if true %}x{% endif %}\n\n"), "x");
}

TEST(Jinja, ForLoops) {
    EXPECT_EQ(
        render(
            "{% for x in [1, 2, 3] %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}"
            "{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }},{% endfor %}"),
        "10TrueFalse332,21FalseFalse321,32FalseTrue310,");
    EXPECT_EQ(
        render("{% for x in 'abc' %}{{ loop.previtem }}{{ x }}{{ loop.nextitem }}|{% endfor %}"),
        "ab|abc|bc|");
    EXPECT_EQ(render("{% for x in [1,2,3,4] if x is even %}{{ x }}{{ loop.index }}{% endfor %}"),
              "2142");
    EXPECT_EQ(render("{% for x in [] %}a{% else %}empty{% endfor %}"), "empty");
    EXPECT_EQ(render("{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}"
                     "{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
              "013");
    EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}"),
              "a=1;b=2;");
    EXPECT_EQ(render("{% for k in {'b': 1, 'a': 2} %}{{ k }}{% endfor %}"), "ba");
    EXPECT_EQ(render("{% for x in [1,2,3] %}{{ loop.cycle('a', 'b') }}{% endfor %}"), "aba");
    EXPECT_EQ(render("{% for x in undefined_thing %}a{% endfor %}"), "");
    // A loop's body has its own scope: a set inside does not leak, and each pass starts afresh.
    EXPECT_EQ(
        render("{% set x = 0 %}{% for i in range(3) %}{{ x }}{% set x = i %}{% endfor %}{{ x }}"),
        "0000");
    EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}"
                     "{% endfor %}{{ ns.n }}"),
              "6");
    EXPECT_TRUE(fails_with("{% for a, b in [1] %}{% endfor %}", "not iterable"));
    EXPECT_TRUE(fails_with("{% for x in none %}{% endfor %}", "'NoneType' object is not iterable"));
}

TEST(Jinja, SetMacrosAndBlocks) {
    EXPECT_EQ(render("{% set a, b = 1, 2 %}{{ a }}{{ b }}"), "12");
    EXPECT_EQ(render("{% set x %}  in {{ 'block' }} {% endset %}[{{ x }}]"), "[  in block ]");
    EXPECT_EQ(render("{% set x | upper %}abc{% endset %}{{ x }}"), "ABC");
    EXPECT_EQ(render("{% macro m(a, b='B', c=none) %}{{ a }}{{ b }}{{ c }}{% endmacro %}"
                     "{{ m(1) }}|{{ m(1, 2) }}|{{ m(1, c=3) }}|{{ m(b=5, a=4) }}"),
              "1BNone|12None|1B3|45None");
    EXPECT_EQ(render("{% macro m(a) %}[{{ a }}]{% endmacro %}{{ m() }}"), "[]");
    EXPECT_EQ(render("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro "
                     "%}{{ f(3) }}"),
              "321");
    EXPECT_TRUE(fails_with("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", "takes not more than 1"));
    EXPECT_TRUE(
        fails_with("{% macro m(a) %}{% endmacro %}{{ m(z=1) }}", "no keyword argument 'z'"));
    EXPECT_EQ(render("{% generation %}gen{% endgeneration %}"), "gen");
    EXPECT_EQ(render("{% filter upper %}a{{ 'b' }}{% endfilter %}"), "AB");
    EXPECT_EQ(render("{% with a = 1 %}{{ a }}{% endwith %}{{ a }}"), "1");
    EXPECT_TRUE(fails_with("{% set x = 1 %}{% set x.a = 2 %}", "non-namespace"));
    EXPECT_TRUE(fails_with("{% set ns = namespace() %}{% set ns._a = 2 %}", "underscore"));
}

TEST(Jinja, ExpressionsFollowPython) {
    EXPECT_EQ(
        render("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }}"),
        "3 -4 2 3.5 1024 0.5");
    EXPECT_EQ(render("{{ -2 ** 2 }} {{ 2 ** 3 ** 2 }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }}"),
              "4 64 7 9");
    EXPECT_EQ(
        render("{{ 1 == 1.0 }} {{ true == 1 }} {{ (1, 2) == [1, 2] }} {{ [1, [2]] == [1, [2]] }}"),
        "True True False True");
    EXPECT_EQ(render("{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }}"),
              "True False True True");
    EXPECT_EQ(
        render("{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [3] }}"),
        "True True True False");
    EXPECT_EQ(render("{{ 0 or 'x' }} {{ 'a' and 'b' }} {{ none or [] }} {{ not 0 }}"),
              "x b [] True");
    EXPECT_EQ(render("{{ 'y' if 1 else 'n' }}{{ 'y' if 0 }}|{{ 'a' ~ 1 ~ none ~ x }}"), "y|a1None");
    EXPECT_EQ(render("{{ 'ab' * 3 }} {{ [0] * 2 }} {{ 3 * 'x' }} {{ 'a' + 'b' }} {{ [1] + [2] }}"),
              "ababab [0, 0] xxx ab [1, 2]");
    EXPECT_EQ(
        render("{{ 'abcdef'[1:4] }} {{ 'abcdef'[::-2] }} {{ [1, 2, 3][-1] }} {{ [1, 2, 3][:-1] }}"),
        "bcd fdb 3 [1, 2]");
    EXPECT_EQ(
        render("{{ 'héllo wörld'[1:4] }} {{ 'héllo'|length }} {{ '日本語'[-1] }} {{ 'aé'[::-1] }}"),
        "éll 5 語 éa");
    EXPECT_EQ(render("{{ m.content }}{{ m['role'] }}{{ m.missing }}",
                     R"({"m": {"role": "u", "content": "c"}})"),
              "cu");
    EXPECT_EQ(render("{{ 'a\\tb\\n\\x41\\u00e9\\'' }}"), "a\tb\nAé'");
    EXPECT_EQ(render("{{ 'a' 'b' }} {{ 0x10 }} {{ 1_000 }} {{ 1e3 }} {{ 2.50 }}"),
              "ab 16 1000 1000.0 2.5");
    EXPECT_TRUE(fails_with("{{ 1 / 0 }}", "division by zero"));
    EXPECT_TRUE(fails_with("{{ 'a' + 1 }}", "can only concatenate str"));
    EXPECT_TRUE(fails_with("{{ 'a' < 1 }}", "not supported between"));
}

TEST(Jinja, PrintsValuesAsPython) {
    EXPECT_EQ(render("{{ [1, 'a', none, true] }}"), "[1, 'a', None, True]");
    EXPECT_EQ(render("{{ {'k': (1,), 'q': \"it's\"} }} {{ () }} {{ (1, 2) }}"),
              "{'k': (1,), 'q': \"it's\"} () (1, 2)");
    EXPECT_EQ(render("{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1e-5 }} {{ 0.0001 }} {{ 123456789.0 "
                     "}} {{ -0.0 }}"),
              "1.0 0.30000000000000004 1e+16 1e-05 0.0001 123456789.0 -0.0");
    EXPECT_EQ(render("{{ x }}", R"({"x": [1.5, 2, "s\n", {"a": null}]})"),
              "[1.5, 2, 's\\n', {'a': None}]");
    EXPECT_EQ(render("{{ none }} {{ true }} {{ x }} {{ y }}", R"({"x": 12345678901234})"),
              "None True 12345678901234 ");
}

TEST(Jinja, UndefinedAsJinja2Default) {
    EXPECT_EQ(
        render("[{{ x }}]{{ x is defined }}{{ x is undefined }}{{ x|length }}{{ x|default('d') }}"),
        "[]FalseTrue0d");
    EXPECT_EQ(render("{% if x %}y{% else %}n{% endif %}{{ x is iterable }}{{ x ~ 'a' }}"),
              "nTruea");
    EXPECT_EQ(render("{{ m.a is defined }}{{ m.a.b is defined }}", R"({"m": {"a": {"c": 1}}})"),
              "TrueFalse");
    EXPECT_TRUE(fails_with("{{ x.y }}", "'x' is undefined"));
    EXPECT_TRUE(fails_with("{{ x['y'] }}", "'x' is undefined"));
    EXPECT_TRUE(fails_with("{{ x + 1 }}", "'x' is undefined"));
    EXPECT_TRUE(fails_with("{{ x() }}", "'x' is undefined"));
    EXPECT_TRUE(fails_with("{{ m.b.c }}", "has no attribute 'b'", R"({"m": {"a": 1}})"));
}

TEST(Jinja, Filters) {
    EXPECT_EQ(
        render("{{ '  a b  '|trim }}|{{ 'xxaxx'|trim('x') }}|{{ 'Ab'|upper }}{{ 'Ab'|lower }}"),
        "a b|a|ABab");
    EXPECT_EQ(render("{{ 'hello WORLD-foo (bar'|title }}|{{ 'hELLO'|capitalize }}|{{ "
                     "'aaa'|replace('a', 'b', 2) }}"),
              "Hello World-Foo (Bar|Hello|bba");
    EXPECT_EQ(
        render("{{ [1, 2]|join(', ') }}|{{ users|join(',', attribute='n') }}|{{ 'abc'|list }}",
               R"({"users": [{"n": "a"}, {"n": "b"}]})"),
        "1, 2|a,b|['a', 'b', 'c']");
    EXPECT_EQ(
        render(
            "{{ [3, 1, 2]|first }}{{ [3, 1, 2]|last }}{{ 'abc'|first }}{{ []|first is defined }}"),
        "32aFalse");
    EXPECT_EQ(
        render("{{ ''|default('d') }}{{ ''|default('d', true) }}{{ none|d('n', boolean=true) }}"),
        "dn");
    EXPECT_EQ(render("{{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ '1.5'|float "
                     "}} {{ 3|float }} {{ 2.7|int }}"),
              "42 4 0 7 1.5 3.0 2");
    EXPECT_EQ(render("{{ {'a': 1}|items|list }} {{ 5|string }}{{ [1]|string }} {{ -3|abs }} {{ [1, "
                     "2.5]|sum }}"),
              "[('a', 1)] 5[1] 3 3.5");
    EXPECT_EQ(render("{{ ['b', 'A', 'a', 'c']|sort }} {{ [3, 1, 2]|sort(reverse=true) }} {{ ['b', "
                     "'A', 'a']|unique|list }}"),
              "['A', 'a', 'b', 'c'] [3, 2, 1] ['b', 'A']");
    EXPECT_EQ(render("{{ xs|sort(attribute='k')|map(attribute='k')|list }} {{ "
                     "xs|map(attribute='z', default=0)|list }}",
                     R"({"xs": [{"k": 2}, {"k": 1}]})"),
              "[1, 2] [0, 0]");
    EXPECT_EQ(render("{{ ['a', 'b']|map('upper')|join }} {{ [1, 2, 3, 4]|select('odd')|list }} "
                     "{{ [1, 2, 3]|reject('equalto', 2)|list }}"),
              "AB [1, 3] [1, 3]");
    EXPECT_EQ(
        render(
            "{{ ms|selectattr('role', 'equalto', 'user')|map(attribute='c')|list }} "
            "{{ ms|rejectattr('role', 'eq', 'user')|list|length }} {{ ms|selectattr('x')|list }}",
            R"({"ms": [{"role": "user", "c": 1}, {"role": "bot", "c": 2}, {"role": "user", "c": 3}]})"),
        "[1, 3] 1 []");
    EXPECT_EQ(render("{{ [1, 2]|reverse|list }} {{ 'abc'|reverse }} {{ 2.5|round }} {{ "
                     "3.14159|round(2) }} {{ 2.5|round(0, 'ceil') }}"),
              "[2, 1] cba 2.0 3.14 3.0");
    EXPECT_EQ(render("{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'x'|safe }}"),
              "a\n  b\n\n  c|  a\n  b|x");
    EXPECT_EQ(render("{{ {'b': 1, 'a': 2}|dictsort }} {{ [1, 5, 3]|max }} {{ ['b', 'a']|min }} {{ "
                     "[1, 2, 3]|count }}"),
              "[('a', 2), ('b', 1)] 5 a 3");
}

TEST(Jinja, ToJsonAsTransformersDefinesIt) {
    const char* ctx = R"({"x": {"b": [1, 2.5, "é\"\n", null, true], "a": {}, "c": []}})";
    EXPECT_EQ(render("{{ x|tojson }}", ctx),
              R"({"b": [1, 2.5, "é\"\n", null, true], "a": {}, "c": []})");
    EXPECT_EQ(render("{{ x|tojson(indent=2) }}", ctx),
              "{\n  \"b\": [\n    1,\n    2.5,\n    \"é\\\"\\n\",\n    null,\n    true\n  ],\n"
              "  \"a\": {},\n  \"c\": []\n}");
    EXPECT_EQ(render("{{ x|tojson(sort_keys=true, separators=(',', ':')) }}", ctx),
              R"({"a":{},"b":[1,2.5,"é\"\n",null,true],"c":[]})");
    EXPECT_EQ(
        render("{{ 'é😀<>&'|tojson(ensure_ascii=true) }} {{ (1, 'a')|tojson }} {{ 1.0|tojson }}"),
        R"("\u00e9\ud83d\ude00<>&" [1, "a"] 1.0)");
    EXPECT_TRUE(fails_with("{{ x|tojson }}", "not JSON serializable"));
}

TEST(Jinja, Tests) {
    EXPECT_EQ(
        render("{{ 1 is number }}{{ true is number }}{{ true is integer }}{{ 1.0 is float }}{{ 'a' "
               "is string }}"
               "{{ {} is mapping }}{{ [] is sequence }}{{ {} is sequence }}{{ 1 is iterable }}"),
        "TrueTrueFalseTrueTrueTrueTrueTrueFalse");
    EXPECT_EQ(render("{{ none is none }}{{ false is false }}{{ 0 is false }}{{ true is boolean "
                     "}}{{ 3 is odd }}"
                     "{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(2) }}"),
              "TrueTrueFalseTrueTrueTrueTrueFalse");
    EXPECT_EQ(
        render("{{ 1 is eq 1 }}{{ 1 is ne 1 }}{{ 1 is lt 2 }}{{ 2 is ge 2 }}{{ 2 is in [1, 2] }}"
               "{{ none is sameas none }}{{ range is callable }}{{ 'a' is not callable }}"),
        "TrueFalseTrueTrueTrueTrueTrueTrue");
}

TEST(Jinja, MethodsOfStrDictAndList) {
    EXPECT_EQ(render("{{ ' a '.strip() }}|{{ 'xax'.lstrip('x') }}|{{ 'xax'.rstrip('x') }}|{{ ' a b "
                     "'.split() }}"
                     "{{ 'a,b,c'.split(',', 1) }}{{ 'a,b,c'.rsplit(',', 1) }}"),
              "a|ax|xa|['a', 'b']['a', 'b,c']['a,b', 'c']");
    EXPECT_EQ(
        render("{{ 'abc'.startswith('a') }}{{ 'abc'.endswith(('x', 'c')) }}{{ 'aXb'.upper() }}"
               "{{ 'aXb'.lower() }}{{ 'hello world'.title() }}{{ 'ab'.replace('a', 'c') }}"),
        "TrueTrueAXBaxbHello Worldcb");
    EXPECT_EQ(render("{{ 'héllo'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'a'.find('z') }} {{ "
                     "'aaa'.count('a') }} "
                     "{{ 'a\\nb\\r\\nc'.splitlines() }} {{ '-'.join(['a', 'b']) }}"),
              "2 3 -1 3 ['a', 'b', 'c'] a-b");
    EXPECT_EQ(render("{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 0) }} {{ d.keys()|list }} {{ "
                     "d.values()|list }} "
                     "{{ d.items()|list }}",
                     R"({"d": {"a": 1, "b": 2}})"),
              "1 None 0 ['a', 'b'] [1, 2] [('a', 1), ('b', 2)]");
    EXPECT_EQ(
        render(
            "{{ '  a  b '.split(None, 1) }}{{ '  a  b  '.rsplit(None, 1) }}{{ 'a,,b'.split(',') }}"
            "{{ ''.split() }}{{ 'abcabc'.find('c', 3) }}{{ 'abcabc'.rfind('a', 0, 3) }}"
            "{{ 'aaaa'.count('a', 1) }}"),
        "['a', 'b ']['  a', 'b']['a', '', 'b'][]503");
    EXPECT_EQ(render("{{ [1, 2, 2].index(2) }} {{ [1, 2, 2].count(2) }}"), "1 2");
    // The immutable sandbox: mutating methods read as unsafe undefined values and fail when called.
    EXPECT_TRUE(fails_with("{% set l = [] %}{{ l.append(1) }}", "access to attribute 'append'"));
    EXPECT_TRUE(fails_with("{{ d.update({}) }}", "access to attribute 'update'", R"({"d": {}})"));
    EXPECT_TRUE(fails_with("{{ 'a {}'.format(1) }}", "not supported: method str.format"));
}

TEST(Jinja, Globals) {
    EXPECT_EQ(
        render("{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(3, 0, -1)|list }}"),
        "[0, 1, 2] [1, 3, 5] [3, 2, 1]");
    EXPECT_EQ(render("{{ dict(a=1, b='x') }} {{ namespace(a=1).a }}"), "{'a': 1, 'b': 'x'} 1");
    EXPECT_TRUE(fails_with("{{ raise_exception('no system role') }}",
                           "chat template raised an exception: no system role"));
    std::tm now{};
    now.tm_year = 125, now.tm_mon = 2, now.tm_mday = 7, now.tm_hour = 14;
    EXPECT_EQ(Template("{{ strftime_now('%Y-%m-%d %H %b') }}").render(Value::dict(), now),
              "2025-03-07 14 Mar");
    EXPECT_TRUE(fails_with("{{ range(1000000)|length }}", "Range too big"));
}

TEST(Jinja, RefusesWhatItCannotRender) {
    EXPECT_TRUE(fails_with("line 1\n{{ x|wordwrap }}",
                           "chat template line 2: not supported: filter 'wordwrap'"));
    EXPECT_TRUE(fails_with("{% if x is foo %}{% endif %}", "not supported: test 'foo'"));
    EXPECT_TRUE(
        fails_with("\n\n{% include 'x' %}", "chat template line 3: not supported: tag 'include'"));
    EXPECT_TRUE(fails_with("{% if x %}", "expected 'elif' or 'else' or 'endif'"));
    EXPECT_TRUE(fails_with("a\n{% if x }}", "chat template line 2: unexpected '}'"));
    EXPECT_TRUE(fails_with("{{ x ", "expected '}}'"));
    EXPECT_TRUE(fails_with("{% for x in y %}{% endif %}", "expected 'else' or 'endfor'"));
    EXPECT_TRUE(fails_with("{% break %}", "outside of a loop"));
    // (Found by fuzz_jinja: a slice in a subscript tuple was evaluated as a slice of nothing.)
    EXPECT_TRUE(
        fails_with("{{ [1, 2, 3][1:, 0] }}", "not supported: a slice among several subscripts"));
    EXPECT_TRUE(fails_with("{{ 'a' % 1 }}", "not supported: string formatting"));
    EXPECT_TRUE(fails_with("{# open", "missing end of comment"));
    EXPECT_TRUE(fails_with("\n{{ 1 +* 2 }}", "chat template line 2: unexpected '*'"));
}

TEST(Jinja, BoundsAHostileTemplate) {
    EXPECT_TRUE(fails_with("{{ " + std::string(300, '(') + "1" + std::string(300, ')') + " }}",
                           "nested over 256"));
    EXPECT_TRUE(fails_with("{{ " + std::string(300, '-') + "1 }}", "nested over 256"));
    EXPECT_TRUE(
        fails_with("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "macros nested over"));
    EXPECT_TRUE(fails_with(
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        "loop iterations and calls (limit)"));
    EXPECT_TRUE(fails_with(
        "{% set s = 'x' * 1000000 %}{% for i in range(100) %}{{ s }}{% endfor %}", "MiB limit"));
    EXPECT_TRUE(fails_with("{{ 'x' * 100000000000 }}", "MiB limit"));
    EXPECT_TRUE(
        fails_with("{% set ns = namespace(l=[]) %}{% for i in range(300) %}{% set ns.l = [ns.l] %}"
                   "{% endfor %}",
                   "nested over 256"));
    // A namespace that holds itself prints bounded and is freed (LeakSanitizer would tell).
    EXPECT_TRUE(fails_with("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}", "too deep"));
}

TEST(Jinja, ValueBuildersAndJson) {
    Value d = Value::dict();
    d.set("b", Value::integer(1))
        .set("a", Value::list({Value::real(0.5), Value::string("x"), Value::none()}));
    d.set("b", Value::boolean(false));
    EXPECT_EQ(d.repr(), "{'b': False, 'a': [0.5, 'x', None]}");
    const Value j =
        Value::from_json(R"({"i": 3, "f": 3.0, "e": 1e2, "s": "\u00e9", "k": {"z": 1, "y": 2}})");
    EXPECT_EQ(j.repr(), "{'i': 3, 'f': 3.0, 'e': 100.0, 's': 'é', 'k': {'z': 1, 'y': 2}}");
    EXPECT_THROW(Value::from_json("{"), Error);
    EXPECT_TRUE(Value::from_json("[1, 2]") == Value::list({Value::integer(1), Value::real(2.0)}));
}

}  // namespace
}  // namespace mt::text::jinja
