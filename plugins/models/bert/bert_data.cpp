#include "bert_data.h"

#include "mt/data/bert_dataset.h"
#include "mt/data/masked_datasets.h"
#include "mt/model_args_reader.h"

namespace mt::plugins::bert {

std::vector<FlagInfo> bert_data_flags() {
    return data::masked_data_flags();
}

std::array<std::shared_ptr<data::SampleDataset>, 3> bert_datasets(
    const data::DatasetRequest& request) {
    data::BertDatasetConfig c;
    data::read_masked_request(request, "BERT", c);
    c.classification_head = !ModelArgsReader(request.args).flag("bert-no-binary-head");
    return data::masked_datasets<data::BertMaskedWordPieceDataset>(request, c);
}

}  // namespace mt::plugins::bert
