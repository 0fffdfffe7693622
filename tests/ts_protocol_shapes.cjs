// Prints, as JSON, the interfaces and type aliases of a TypeScript file, read with the
// TypeScript compiler's parser (not a regex): for tests/test_widgets_protocols.py.
//   node tests/ts_protocol_shapes.cjs <typescript package dir> <file.ts>
'use strict';
const fs = require('fs');
const ts = require(process.argv[2]);
const file = process.argv[3];
const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf-8'), ts.ScriptTarget.ES2020, true);

// One type as a sorted list of simple names: 'number', 'string', 'boolean', 'null', a string
// literal as "'chunk'", a referenced type by its name.
function simple(node) {
  switch (node.kind) {
    case ts.SyntaxKind.NumberKeyword:
      return ['number'];
    case ts.SyntaxKind.StringKeyword:
      return ['string'];
    case ts.SyntaxKind.BooleanKeyword:
      return ['boolean'];
    case ts.SyntaxKind.UnionType:
      return node.types.flatMap(simple).sort();
    case ts.SyntaxKind.LiteralType:
      if (node.literal.kind === ts.SyntaxKind.NullKeyword) {
        return ['null'];
      }
      if (ts.isStringLiteral(node.literal)) {
        return [`'${node.literal.text}'`];
      }
      break;
    case ts.SyntaxKind.TypeReference:
      return [node.typeName.getText(source)];
  }
  throw new Error(`${file}: a type this test does not read: ${node.getText(source)}`);
}

const interfaces = {};
const aliases = {};
for (const statement of source.statements) {
  if (ts.isInterfaceDeclaration(statement)) {
    const fields = {};
    for (const member of statement.members) {
      if (!ts.isPropertySignature(member) || !member.type) {
        throw new Error(`${file}: ${statement.name.text} has a member that is not a field`);
      }
      fields[member.name.getText(source)] = {
        required: member.questionToken === undefined,
        type: simple(member.type)
      };
    }
    interfaces[statement.name.text] = fields;
  } else if (ts.isTypeAliasDeclaration(statement)) {
    aliases[statement.name.text] = simple(statement.type);
  }
}
process.stdout.write(JSON.stringify({ interfaces, aliases }));
