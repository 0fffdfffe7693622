// ESLint for the labextension's TypeScript, in the JupyterLab extension template's manner:
// the recommended JavaScript and typescript-eslint rules, a few house rules on top, and
// Prettier's formatting checked as a rule (eslint-plugin-prettier) so `jlpm lint:check` fails
// on unformatted code. Run: `jlpm lint:check` (check) or `jlpm lint` (fix).
import js from '@eslint/js';
import prettierRecommended from 'eslint-plugin-prettier/recommended';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'lib/', '.yarn/', '**/*.js', '**/*.d.ts'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  // A disable comment that no longer hides anything is an error (exceptions do not linger).
  { linterOptions: { reportUnusedDisableDirectives: 'error' } },
  {
    files: ['**/*.ts'],
    languageOptions: {
      globals: { ...globals.browser, ...globals.node },
      sourceType: 'module'
    },
    rules: {
      // Interfaces are named IThing, as in JupyterLab's own sources.
      '@typescript-eslint/naming-convention': [
        'error',
        { selector: 'interface', format: ['PascalCase'], custom: { regex: '^I[A-Z]', match: true } }
      ],
      '@typescript-eslint/no-unused-vars': ['error', { args: 'none' }],
      // No `any`: JupyterLab's objects are duck-typed in src/lab.ts instead. An exception is
      // named where it stays, by a disable comment for this rule that gives its reason after
      // `--` (tests/test_labextension.py checks that every disable comment does).
      '@typescript-eslint/no-explicit-any': 'error',
      curly: ['error', 'all'],
      eqeqeq: 'error',
      'prefer-arrow-callback': 'error',
      quotes: ['error', 'single', { avoidEscape: true, allowTemplateLiterals: false }]
    }
  },
  prettierRecommended
);
