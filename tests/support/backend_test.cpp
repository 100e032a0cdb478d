#include "backend_test.h"

#include <map>
#include <memory>

#include "mt/registry.h"

namespace mt::test {

namespace {

std::map<std::string, std::unique_ptr<Backend>>& backends() {
    static std::map<std::string, std::unique_ptr<Backend>> made = [] {
        std::map<std::string, std::unique_ptr<Backend>> m;
        m["cpu"] = make_cpu_backend();
        // A plugin backend joins when it loads and finds its device; without one (no GPU, or
        // a build without CUDA) its tests are simply not instantiated.
        try {
            m["cuda"] = Registry::global().create_backend("cuda", 0);
        } catch (const std::exception&) {
        }
        return m;
    }();
    return made;
}

}  // namespace

std::vector<std::string> test_backends() {
    std::vector<std::string> names{"cpu"};
    for (const auto& [name, backend] : backends())
        if (name != "cpu" && backend) names.push_back(name);
    return names;
}

Backend& test_backend(const std::string& name) {
    auto it = backends().find(name);
    MT_CHECK(it != backends().end() && it->second, "no test backend named ", name);
    return *it->second;
}

}  // namespace mt::test
