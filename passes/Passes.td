#ifndef KILN_PASSES_PASSES_TD
#define KILN_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnFoldBatchNorm : Pass<"kiln-fold-batch-norm", "ModuleOp"> {
  let summary = "Fold inference BatchNormalization into the convolution that feeds it";
  let description = [{
    `kiln.batch_norm(kiln.conv(x, W, b), scale, bias, mean, var)` with
    constant f32 weights and parameters, where the convolution has no other
    user, becomes one `kiln.conv(x, W', b')` with, per output channel f,
    s = scale[f] / sqrt(var[f] + epsilon), W'[f] = W[f] * s and
    b'[f] = (b[f] - mean[f]) * s + bias[f] (b = 0 without a bias). The
    batch norm then costs nothing at run time. With `report`, every batch
    norm gets a remark saying whether it was folded and, if not, why.
  }];
  let options = [
    Option<"report", "report", "bool", "false",
           "Emit a remark per batch norm: folded, or the reason it was not">,
  ];
}

#endif
